#!/usr/bin/env python3
"""A fixed Placement workload with its correctness checks, against one URL or two side by side.

    bench.py run URL [--providers 1000] [--concurrency 8] [--repeat 200] [--json FILE]
    bench.py compare URL_A URL_B [run options] [--rounds 2]

`run` expects an empty Placement (the standard classes and traits only) and times five phases,
every request an admin's (`x-auth-token: admin`) at the newest microversion both speak (1.39):

  i    POST /resource_providers, P of them (P = --providers)
  ii   PUT .../inventories on each: VCPU 64, MEMORY_MB 65536, DISK_GB 1000,
       CUSTOM_BAREMETAL_GOLD 1
  iii  2P claims, C at a time (C = --concurrency), two per provider k sent back to back:
         k even:          two new consumers each want GOLD 1 + VCPU 2 + MEMORY_MB 1024:
                          one 204, one 409 (no room: a single GOLD unit)
         k odd, k%10!=1:  two new consumers want VCPU 2 + MEMORY_MB 1024: both 204
         k%10 == 1:       one new consumer twice, each with consumer_generation null:
                          one 204, one 409 placement.concurrent_update
       (P = 1000: 1,400 204s, 500 capacity 409s, 100 concurrent_update 409s)
  iv   GET /allocation_candidates?resources=CUSTOM_BAREMETAL_GOLD:1, R times (R = --repeat):
       P/2 candidates (GOLD is left on the odd providers); then resources=VCPU:2,MEMORY_MB:1024,
       R times: P candidates
  v    DELETE /allocations/{consumer} for every consumer holding allocations

then deletes the providers (not timed). Per phase: requests, seconds, requests per second,
latency p50 and p99 (ms), the machine's CPU busy share, and the answers by status and error
code. The checks: phase iii's statuses, GOLD never over its one unit, iv's candidate counts.
Exit 1 when a request failed unexpectedly or a check did not hold.

`compare` runs A, B, A, B … (--rounds each, alternating so that the machine's drift hits both
alike), each after $RESET_CMD_A / $RESET_CMD_B (shell commands that empty that side), and prints
per phase each side's median requests per second and p99 and the ratio B/A. A check that fails
is reported, not made the exit status (the real Placement over-allocates GOLD under racing
claims); a request that fails is. With
--wait-quiet SECONDS each run first waits (at most that long) for an idle machine.

Standard library only. Provider and consumer uuids are uuid5 of a tag (random per run).
"""

import argparse
import http.client
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

GOLD = "CUSTOM_BAREMETAL_GOLD"
WANTED_VERSION = (1, 39)


class Client:
    """Keep-alive HTTP, one connection per thread."""

    def __init__(self, url):
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.version = "1.0"
        self.local = threading.local()

    def send(self, method, path, body=None, parse=True):
        """(status, body, seconds): the body parsed, or (`parse` false) parsed only for an
        error — a client that parsed every answer of 500 candidates would measure itself."""
        data = None if body is None else json.dumps(body)
        headers = {"x-auth-token": "admin", "accept": "application/json",
                   "openstack-api-version": f"placement {self.version}"}
        if data is not None:
            headers["content-type"] = "application/json"
        for attempt in (0, 1):
            connection = getattr(self.local, "connection", None)
            if connection is None:
                connection = http.client.HTTPConnection(self.host, self.port, timeout=300)
                self.local.connection = connection
            started = time.perf_counter()
            try:
                connection.request(method, self.prefix + path, data, headers)
                response = connection.getresponse()
                raw = response.read()
            except (http.client.HTTPException, OSError):
                connection.close()
                self.local.connection = None
                if attempt:
                    raise
                continue
            took = time.perf_counter() - started
            if not parse and response.status < 400:
                return response.status, None, took
            try:
                parsed = json.loads(raw) if raw else None
            except ValueError:
                parsed = None
            return response.status, parsed, took
        raise OSError("unreachable")

    def negotiate(self):
        status, body, _ = self.send("GET", "/")
        if status != 200:
            raise SystemExit(f"GET / answered {status}")
        newest = tuple(int(part) for part in body["versions"][0]["max_version"].split("."))
        self.version = "%d.%d" % min(newest, WANTED_VERSION)


def machine_cpu():
    """(total, idle) jiffies of the machine."""
    with open("/proc/stat") as stat:
        values = [int(value) for value in stat.readline().split()[1:]]
    return sum(values), values[3] + values[4]


def wait_quiet(seconds):
    """Waits (at most `seconds`) until the machine was 90 % idle for three 5-second windows."""
    deadline, quiet = time.time() + seconds, 0
    while time.time() < deadline and quiet < 3:
        before = machine_cpu()
        time.sleep(5)
        after = machine_cpu()
        idle = (after[1] - before[1]) / max(1, after[0] - before[0])
        quiet = quiet + 1 if idle >= 0.9 else 0


class Phase:
    def __init__(self, name):
        self.name, self.latencies, self.answers = name, [], {}
        self.seconds, self.cpu, self.failures = 0.0, None, 0

    def record(self, status, body, took):
        code = ""
        if status >= 400 and isinstance(body, dict) and body.get("errors"):
            code = body["errors"][0].get("code", "")
        key = f"{status} {code}".strip()
        self.answers[key] = self.answers.get(key, 0) + 1
        self.latencies.append(took)

    def summary(self):
        ordered = sorted(self.latencies)
        pick = lambda share: ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000
        return {"phase": self.name, "requests": len(ordered), "seconds": round(self.seconds, 3),
                "per_second": round(len(ordered) / self.seconds, 1) if self.seconds else 0,
                "p50_ms": round(pick(0.5), 2) if ordered else 0,
                "p99_ms": round(pick(0.99), 2) if ordered else 0,
                "cpu_busy_pct": self.cpu, "answers": self.answers}


def run_phase(client, name, requests, concurrency, seen=None):
    """Sends `requests` ((method, path, body), in order) `concurrency` at a time."""
    phase, waiting = Phase(name), queue.Queue()
    for index, request in enumerate(requests):
        waiting.put((index, request))
    lock = threading.Lock()

    def worker():
        while True:
            try:
                index, (method, path, body) = waiting.get_nowait()
            except queue.Empty:
                return
            try:
                status, answer, took = client.send(method, path, body, parse=False)
            except OSError:
                status, answer, took = 0, None, 0.0
            with lock:
                phase.record(status, answer, took)
                if seen is not None:
                    seen(index, status, answer)

    workers = [threading.Thread(target=worker) for _ in range(max(1, min(concurrency, len(requests))))]
    before, started = machine_cpu(), time.perf_counter()
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    phase.seconds = time.perf_counter() - started
    after = machine_cpu()
    phase.cpu = round(100 * (1 - (after[1] - before[1]) / max(1, after[0] - before[0])), 1)
    return phase


def claims(providers, consumer):
    """Phase iii's requests and what each pair must give."""
    small = {"VCPU": 2, "MEMORY_MB": 1024}
    requests = []
    for k, provider in enumerate(providers):
        resources = dict(small, **{GOLD: 1}) if k % 2 == 0 else small
        first = consumer(k, 0)
        second = first if k % 10 == 1 else consumer(k, 1)
        for who in (first, second):
            body = {"allocations": {provider: {"resources": resources}}, "project_id": "bench",
                    "user_id": "bench", "consumer_generation": None, "consumer_type": "INSTANCE"}
            requests.append(("PUT", f"/allocations/{who}", body))
    return requests


def expected_claims(count):
    even = (count + 1) // 2
    same = sum(1 for k in range(count) if k % 10 == 1)
    return {"204": count * 2 - even - same, "409 placement.undefined_code": even,
            "409 placement.concurrent_update": same}


def run(url, options):
    """One run of the workload; returns (phase summaries, problems found)."""
    if options.wait_quiet:
        wait_quiet(options.wait_quiet)
    client = Client(url)
    client.negotiate()
    tag = uuid.uuid4()
    provider = lambda k: str(uuid.uuid5(tag, f"rp-{k}"))
    consumer = lambda k, which: str(uuid.uuid5(tag, f"consumer-{k}-{which}"))
    count = options.providers
    providers = [provider(k) for k in range(count)]
    client.send("PUT", f"/resource_classes/{GOLD}")
    phases, problems = [], []
    phases.append(run_phase(client, "create providers", [
        ("POST", "/resource_providers", {"name": f"bench-{tag}-{k}", "uuid": uuid_})
        for k, uuid_ in enumerate(providers)], options.concurrency))
    inventory = {"VCPU": 64, "MEMORY_MB": 65536, "DISK_GB": 1000, GOLD: 1}
    phases.append(run_phase(client, "replace inventories", [
        ("PUT", f"/resource_providers/{uuid_}/inventories", {
            "resource_provider_generation": 0,
            "inventories": {rc: {"total": total} for rc, total in inventory.items()}})
        for uuid_ in providers], options.concurrency))
    holding = set()
    claim_requests = claims(providers, consumer)
    seen = lambda index, status, _: status == 204 and holding.add(claim_requests[index][1])
    phases.append(run_phase(client, "racing claims", claim_requests, options.concurrency, seen))
    if {key: value for key, value in phases[-1].answers.items()} != expected_claims(count):
        problems.append(f"claims answered {phases[-1].answers}, not {expected_claims(count)}")
    for name, query, wanted in (
            ("candidates GOLD", f"resources={GOLD}:1", count // 2),
            ("candidates VCPU+RAM", "resources=VCPU:2,MEMORY_MB:1024", count)):
        path = f"/allocation_candidates?{query}"
        phases.append(run_phase(client, name, [("GET", path, None)] * options.repeat,
                                options.concurrency))
        status, body, _ = client.send("GET", path)
        found = len(body["allocation_requests"]) if status == 200 else None
        if found != wanted:
            problems.append(f"{name}: {found} candidates, not {wanted}")
    gold = gold_used(client, providers)
    if gold > count // 2:
        problems.append(f"GOLD used {gold} times on {count // 2} units")
    phases.append(run_phase(client, "delete allocations",
                            [("DELETE", path, None) for path in sorted(holding)],
                            options.concurrency))
    for uuid_ in providers:
        client.send("DELETE", f"/resource_providers/{uuid_}")
    for phase in phases:
        failed = sum(n for key, n in phase.answers.items() if key.startswith(("0", "5")))
        if failed:
            problems.append(f"{phase.name}: {failed} requests failed ({phase.answers})")
    return [phase.summary() for phase in phases], problems


def gold_used(client, providers):
    used = 0
    for uuid_ in providers[::2]:
        status, body, _ = client.send("GET", f"/resource_providers/{uuid_}/usages")
        used += body["usages"].get(GOLD, 0) if status == 200 else 0
    return used


def print_run(summaries, problems):
    print(f"{'phase':22} {'requests':>8} {'seconds':>8} {'req/s':>9} {'p50 ms':>8} "
          f"{'p99 ms':>8} {'cpu %':>6}  answers")
    for s in summaries:
        print(f"{s['phase']:22} {s['requests']:8} {s['seconds']:8.2f} {s['per_second']:9.1f} "
              f"{s['p50_ms']:8.2f} {s['p99_ms']:8.2f} {s['cpu_busy_pct']:6.1f}  {s['answers']}")
    for problem in problems:
        print(f"CHECK FAILED: {problem}")
    if not problems:
        print("checks: every status and count as expected")


def compare(url_a, url_b, options):
    runs = {"A": [], "B": []}
    clean = True
    for round_ in range(options.rounds):
        for side, url in (("A", url_a), ("B", url_b)):
            reset = os.environ.get(f"RESET_CMD_{side}")
            if reset:
                subprocess.run(["bash", "-c", reset], check=True)
            summaries, problems = run(url, options)
            print(f"== {side} round {round_ + 1}: {url}")
            print_run(summaries, problems)
            # A check that fails is reported (the real Placement over-allocates under racing
            # claims); a request that failed makes the comparison fail.
            clean = clean and not any("requests failed" in problem for problem in problems)
            runs[side].append(summaries)
    print(f"\n{'phase':22} {'A req/s':>9} {'B req/s':>9} {'B/A':>6} {'A p99':>8} {'B p99':>8}")
    for index, phase in enumerate(runs["A"][0]):
        median = lambda side, key: statistics.median(run[index][key] for run in runs[side])
        a, b = median("A", "per_second"), median("B", "per_second")
        print(f"{phase['phase']:22} {a:9.1f} {b:9.1f} {b / a if a else 0:6.1f} "
              f"{median('A', 'p99_ms'):8.1f} {median('B', 'p99_ms'):8.1f}")
    return runs, clean


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["run", "compare"])
    parser.add_argument("urls", nargs="+")
    parser.add_argument("--providers", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--wait-quiet", type=float, default=0, metavar="SECONDS")
    parser.add_argument("--json", help="also write the results to this file")
    options = parser.parse_args(argv[1:])
    if options.mode == "run":
        if len(options.urls) != 1:
            parser.error("run takes one URL")
        summaries, problems = run(options.urls[0].rstrip("/"), options)
        print_run(summaries, problems)
        result, ok = {"phases": summaries, "problems": problems}, not problems
    else:
        if len(options.urls) != 2:
            parser.error("compare takes two URLs")
        result, ok = compare(*(url.rstrip("/") for url in options.urls), options)
    if options.json:
        with open(options.json, "w") as out:
            json.dump(result, out, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

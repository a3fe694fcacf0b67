#!/usr/bin/env python3
"""The figures of a database failover (issue 28): ringmaster on a real Patroni cluster
(`scripts/patroni`, Patroni's default timings unless given), two `serve` processes (4 hosts,
200 simulated nodes), one writer booting and deleting without pause and one reader; then a
switchover, a hard failover and a silent-host failover, each followed by the old primary's
return. For each it prints: the primary's loss to Patroni's promotion, to ringmaster's first
successful write and read after it, the 503s (and other failures) answered meanwhile, and the
nodes moved (must be 0).

Usage: scripts/bench-failover.py [--ttl 30] [--loop-wait 10] [--retry-timeout 10]
                                 [--binary PATH] [--events switchover,failover,silent]
Needs what scripts/patroni needs (scripts/bootstrap --with-patroni), as root for --silent.
Everything runs on 127.0.0.1 and stops by itself.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ringlab import Process, build, http, log  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATRONI = os.path.join(REPO, "scripts", "patroni")


def patroni(env, *args):
    done = subprocess.run([PATRONI, *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"scripts/patroni {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


class Traffic:
    """A writer (boot, then delete the previous boot) and a reader, each logging every answer
    with its time."""

    def __init__(self, addresses):
        self.addresses = addresses
        self.stop = threading.Event()
        self.writes = []  # (time, status)
        self.reads = []
        self.lock = threading.Lock()

    def writer(self):
        previous = None
        count = 0
        while not self.stop.is_set():
            count += 1
            address = self.addresses[count % len(self.addresses)]
            body = {"uuid": str(uuid.uuid4()), "name": f"bench-{count}",
                    "resource_class": "baremetal"}
            status, _ = http(address, "POST", "/api/v1/instances", body, timeout=60)
            with self.lock:
                self.writes.append((time.time(), status))
            if status in (200, 201):
                if previous:
                    http(address, "DELETE", f"/api/v1/instances/{previous}", timeout=60)
                previous = body["uuid"]
            time.sleep(0.1)

    def reader(self):
        while not self.stop.is_set():
            status, _ = http(self.addresses[0], "GET", "/api/v1/instances?limit=5", timeout=60)
            with self.lock:
                self.reads.append((time.time(), status))
            time.sleep(0.1)

    def figures(self, lost_at, promoted_at, until):
        with self.lock:
            writes = [entry for entry in self.writes if lost_at <= entry[0] <= until]
            reads = [entry for entry in self.reads if lost_at <= entry[0] <= until]
        first = lambda entries, ok: next((at for at, status in entries
                                          if at >= promoted_at and status in ok), None)
        write_ok = first(writes, (200, 201))
        read_ok = first(reads, (200,))
        failed = collections.Counter(str(status) for _, status in writes + reads
                                     if status not in (200, 201, 204))
        return {
            "promoted_after_s": round(promoted_at - lost_at, 2),
            "first_write_after_promotion_s": None if write_ok is None else round(write_ok - promoted_at, 2),
            "first_read_after_promotion_s": None if read_ok is None else round(read_ok - promoted_at, 2),
            "failed_answers": dict(failed),
        }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ttl", default="30")
    parser.add_argument("--loop-wait", default="10")
    parser.add_argument("--retry-timeout", default="10")
    parser.add_argument("--binary")
    parser.add_argument("--events", default="switchover,failover,silent")
    args = parser.parse_args()
    binary = args.binary or build(REPO)
    root = tempfile.mkdtemp(prefix="ringmaster-bench-failover-")
    os.chmod(root, 0o755)
    env = dict(os.environ, PATRONI_STATE_DIR=os.path.join(root, "cluster"),
               PATRONI_PORT_BASE="17600")
    url = patroni(env, "start", "--ttl", args.ttl, "--loop-wait", args.loop_wait,
                  "--retry-timeout", args.retry_timeout)
    log(f"cluster up: {url}")
    flags = ["--report-interval", "1s", "--service-down-time", "10s", "--rebalance-interval",
             "1s", "--database-grace", "120s"]
    processes = [Process(0, binary, url, root, ["fo-a-1", "fo-a-2"], flags, nodes=200),
                 Process(1, binary, url, root, ["fo-b-1", "fo-b-2"], flags)]
    try:
        for process in processes:
            if not process.start():
                sys.exit(f"serve did not start: {process.log_lines()[-5:]}")
        time.sleep(10)
        address = processes[0].address
        moves_before = len(http(address, "GET", "/api/v1/moves")[1] or [])
        traffic = Traffic([p.address for p in processes])
        threads = [threading.Thread(target=traffic.writer), threading.Thread(target=traffic.reader)]
        for thread in threads:
            thread.start()
        results = {}
        for event in args.events.split(","):
            time.sleep(5)
            command = {"switchover": ["switchover"], "failover": ["failover"],
                       "silent": ["failover", "--silent"]}[event]
            line = json.loads(patroni(env, *command))
            if event != "switchover":
                patroni(env, "recover")
            time.sleep(5)
            figures = traffic.figures(line["lost_at"], line["promoted_at"], time.time())
            moves = len(http(address, "GET", "/api/v1/moves")[1] or []) - moves_before
            figures["nodes_moved"] = moves
            results[event] = figures
            log(f"{event}: {json.dumps(figures)}")
        traffic.stop.set()
        for thread in threads:
            thread.join()
        print(json.dumps(results, indent=1))
    finally:
        for process in processes:
            process.kill()
        patroni(env, "stop")


if __name__ == "__main__":
    main()

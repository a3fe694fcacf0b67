#!/usr/bin/env python3
"""The figures of a database failover (issue 28): ringmaster on a real Patroni cluster
(`scripts/patroni`, Patroni's default timings unless given), two `serve` processes (4 hosts,
200 simulated nodes), one writer booting and deleting without pause and one reader; then a
switchover, a hard failover and a silent-host failover, each followed by the old primary's
return. For each it prints: the primary's loss to Patroni's promotion, to ringmaster's first
successful write and read after it, the 503s (and other failures) answered meanwhile, and the
nodes moved (must be 0); at the end, the acknowledged boots missing from the primary (must be
0). Exits 1 when a node moved or an acknowledged boot is missing.

Usage: scripts/bench-failover.py [--ttl 30] [--loop-wait 10] [--retry-timeout 10]
                                 [--binary PATH] [--events switchover,failover,silent]
                                 [--writers 1] [--keep]
Needs what scripts/patroni needs (scripts/bootstrap --with-patroni), as root for --silent.
Everything runs on 127.0.0.1 and stops by itself.
"""

import argparse
import collections
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ringlab import PatroniCluster, Process, build, http, log  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Traffic:
    """A writer (boot, then delete the previous boot) and a reader, each logging every answer
    with its time."""

    def __init__(self, addresses):
        self.addresses = addresses
        self.stop = threading.Event()
        self.writes = []  # (time, status)
        self.reads = []
        self.acknowledged = {}  # uuid -> (time, status)
        self.refusals = collections.Counter()  # "status message" of each refused write
        self.lock = threading.Lock()

    def writer(self, worker=0):
        """Boots, then deletes its previous boot; an answer that says nothing (503, no answer)
        is retried with the same uuid, as a client must (the boot is made once)."""
        previous = None
        count = 0
        while not self.stop.is_set():
            count += 1
            address = self.addresses[(count + worker) % len(self.addresses)]
            body = {"uuid": str(uuid.uuid4()), "name": f"bench-{worker}-{count}",
                    "resource_class": "baremetal"}
            status = self.call(address, "POST", "/api/v1/instances", body, (200, 201))
            if status in (200, 201):
                with self.lock:
                    self.acknowledged[body["uuid"]] = (time.strftime("%H:%M:%S"), status)
                if previous:
                    self.call(address, "DELETE", f"/api/v1/instances/{previous}", None,
                              (204, 404), log=False)
                previous = body["uuid"]
            time.sleep(0.1)

    def call(self, address, method, path, body, done, log=True):
        for _ in range(20):
            status, reply = http(address, method, path, body, timeout=60)
            if log:
                with self.lock:
                    self.writes.append((time.time(), status))
                    if status not in done:
                        message = reply.get("error", reply) if isinstance(reply, dict) else reply
                        self.refusals[f"{status} {str(message)[:90]}"] += 1
            if status in done or (status is not None and status < 500) or self.stop.is_set():
                return status
            time.sleep(0.5)
        return status

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


def missing(cluster, acknowledged):
    """The acknowledged boots the primary does not have (live or deleted)."""
    present = set()
    uuids = list(acknowledged)
    for start in range(0, len(uuids), 500):
        listed = ",".join(f"'{u}'" for u in uuids[start:start + 500])
        present.update(row[0] for row in cluster.psql(
            f"SELECT uuid FROM instances WHERE uuid IN ({listed})"))
    return {u: acknowledged[u] for u in uuids if u not in present}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ttl", type=int, default=30)
    parser.add_argument("--loop-wait", type=int, default=10)
    parser.add_argument("--retry-timeout", type=int, default=10)
    parser.add_argument("--binary")
    parser.add_argument("--events", default="switchover,failover,silent")
    parser.add_argument("--keep", action="store_true", help="keep the logs and the cluster's data")
    parser.add_argument("--writers", type=int, default=1, help="clients booting at once")
    args = parser.parse_args()
    binary = args.binary or build(REPO)
    root = tempfile.mkdtemp(prefix="ringmaster-bench-failover-")
    os.chmod(root, 0o755)
    cluster = PatroniCluster(root, 17600, args.ttl, args.loop_wait, args.retry_timeout)
    log(f"cluster up: {cluster.url}")
    flags = ["--report-interval", "1s", "--service-down-time", "10s", "--rebalance-interval",
             "1s", "--database-grace", "120s"]
    processes = [Process(0, binary, cluster.url, root, ["fo-a-1", "fo-a-2"], flags, nodes=200),
                 Process(1, binary, cluster.url, root, ["fo-b-1", "fo-b-2"], flags)]
    code = 1
    try:
        for process in processes:
            if not process.start():
                sys.exit(f"serve did not start: {process.log_lines()[-5:]}")
        time.sleep(10)
        address = processes[0].address
        moves_before = len(http(address, "GET", "/api/v1/moves")[1] or [])
        traffic = Traffic([p.address for p in processes])
        threads = [threading.Thread(target=traffic.writer, args=(worker,))
                   for worker in range(args.writers)]
        threads.append(threading.Thread(target=traffic.reader))
        for thread in threads:
            thread.start()
        results = {}
        for event in args.events.split(","):
            time.sleep(5)
            if event == "switchover":
                line = cluster.switchover()
            elif event in ("failover", "silent"):
                line = cluster.failover(silent=event == "silent")
                cluster.recover()
            else:
                sys.exit(f"unknown event {event}: switchover, failover or silent")
            time.sleep(5)
            figures = traffic.figures(line["lost_at"], line["promoted_at"], time.time())
            moves = len(http(address, "GET", "/api/v1/moves")[1] or []) - moves_before
            figures["nodes_moved"] = moves
            results[f"{len(results) + 1}. {event}"] = figures
            log(f"{event}: {json.dumps(figures)}")
        traffic.stop.set()
        for thread in threads:
            thread.join()
        lost = missing(cluster, traffic.acknowledged)
        results["refused_writes"] = dict(traffic.refusals)
        results["acknowledged_boots"] = len(traffic.acknowledged)
        results["acknowledged_boots_missing"] = len(lost)
        for uuid, (at, status) in sorted(lost.items(), key=lambda item: item[1]):
            log(f"acknowledged boot {uuid} ({status} at {at}) is missing")
        print(json.dumps(results, indent=1))
        moved = any(f.get("nodes_moved") for f in results.values() if isinstance(f, dict))
        code = 1 if lost or moved else 0
    finally:
        for process in processes:
            process.kill()
        cluster.stop(keep=args.keep or code != 0)
        if args.keep or code != 0:
            log(f"logs kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()

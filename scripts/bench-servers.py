#!/usr/bin/env python3
"""The Compute API's benchmark (issue 26), against a ringmaster `demo` started with enough
nodes (stdlib only):

1. boots: C clients each create B servers through `POST /compute/v2.1/servers` and poll
   `GET /servers/{id}` until ACTIVE (as `openstack server create --wait` does, but every
   0.05 s); reports servers ACTIVE per second and the p50/p99 of create → ACTIVE;
2. listing: fills up to N servers in all (F clients creating, not waiting), then times
   `GET /servers/detail?limit=1000` R times (p50/p99).

Checks every server ends ACTIVE. Exit 1 when a check fails.

  python3 scripts/bench-servers.py http://127.0.0.1:8080 [--clients 10] [--boots 20]
      [--servers 10000] [--reads 50] [--fill-clients 1] [--boots-only]
"""

import argparse
import http.client
import json
import sys
import threading
import time
import urllib.parse

HEADERS = {"x-auth-token": "admin", "content-type": "application/json",
           "accept": "application/json", "openstack-api-version": "compute 2.100"}
IMAGE = "6b5f4c1e-0d5e-4d8a-9a0e-2f54a5e0b6c1"


class Client:
    def __init__(self, url):
        parsed = urllib.parse.urlparse(url)
        self.conn = http.client.HTTPConnection(parsed.hostname, parsed.port or 80, timeout=120)

    def call(self, method, path, body=None):
        self.conn.request(method, "/compute/v2.1" + path,
                          body=None if body is None else json.dumps(body), headers=HEADERS)
        response = self.conn.getresponse()
        text = response.read()
        return response.status, (json.loads(text) if text else None)


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def flavor(url):
    client = Client(url)
    status, body = client.call("POST", "/flavors", {"flavor": {
        "name": f"bench-{time.time_ns()}", "ram": 1, "vcpus": 1, "disk": 1}})
    assert status == 200, (status, body)
    flavor_id = body["flavor"]["id"]
    status, _ = client.call("POST", f"/flavors/{flavor_id}/os-extra_specs", {"extra_specs": {
        "resources:CUSTOM_BAREMETAL": "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0",
        "resources:DISK_GB": "0"}})
    assert status == 200
    return flavor_id


def create(client, flavor_id, name):
    status, body = client.call("POST", "/servers", {"server": {
        "name": name, "imageRef": IMAGE, "flavorRef": flavor_id, "networks": "none"}})
    if status != 202:
        raise RuntimeError(f"create {name}: {status} {body}")
    return body["server"]["id"]


def boots(url, flavor_id, clients, count):
    latencies, failures = [], []
    lock = threading.Lock()

    def worker(index):
        client = Client(url)
        for number in range(count):
            started = time.monotonic()
            try:
                server = create(client, flavor_id, f"boot-{index}-{number}")
                while True:
                    _, body = client.call("GET", f"/servers/{server}")
                    status = body["server"]["status"]
                    if status == "ACTIVE":
                        break
                    if status == "ERROR":
                        raise RuntimeError(f"{server} ERROR: {body['server'].get('fault')}")
                    time.sleep(0.05)
                with lock:
                    latencies.append(time.monotonic() - started)
            except Exception as error:  # noqa: BLE001 — reported below
                with lock:
                    failures.append(str(error))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    return latencies, failures, elapsed


def fill(url, flavor_id, clients, count):
    """Creates `count` servers, `clients` at a time, not waiting for them."""
    def worker(index):
        client = Client(url)
        for number in range(index, count, clients):
            create(client, flavor_id, f"fill-{number}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--boots", type=int, default=20, help="servers per client")
    parser.add_argument("--servers", type=int, default=10000)
    parser.add_argument("--reads", type=int, default=50)
    parser.add_argument("--fill-clients", type=int, default=1,
                        help="clients filling at once (10 at 10,300 nodes overloads the "
                             "free-node pick: see the README's figures)")
    parser.add_argument("--boots-only", action="store_true",
                        help="time the boots only: no fill, no listing")
    args = parser.parse_args()
    flavor_id = flavor(args.url)

    latencies, failures, elapsed = boots(args.url, flavor_id, args.clients, args.boots)
    if failures:
        print(f"FAILED: {len(failures)} boots: {failures[:3]}")
        return 1
    print(f"{len(latencies)} servers ACTIVE by {args.clients} clients in {elapsed:.1f} s: "
          f"{len(latencies) / elapsed:.1f} servers/s; create → ACTIVE p50 "
          f"{percentile(latencies, 0.5) * 1000:.0f} ms, p99 {percentile(latencies, 0.99) * 1000:.0f} ms")
    if args.boots_only:
        return 0

    fill_started = time.monotonic()
    fill(args.url, flavor_id, args.fill_clients, args.servers - len(latencies))
    print(f"filled to {args.servers} servers by {args.fill_clients} clients in "
          f"{time.monotonic() - fill_started:.0f} s")
    client = Client(args.url)
    reads = []
    for _ in range(args.reads):
        started = time.monotonic()
        status, body = client.call("GET", "/servers/detail?limit=1000")
        reads.append(time.monotonic() - started)
        if status != 200 or len(body["servers"]) != 1000:
            print(f"FAILED: GET /servers/detail answered {status} with "
                  f"{len(body.get('servers', [])) if body else 0} servers")
            return 1
    print(f"GET /servers/detail?limit=1000 with {args.servers} servers: p50 "
          f"{percentile(reads, 0.5) * 1000:.0f} ms, p99 {percentile(reads, 0.99) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

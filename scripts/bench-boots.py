#!/usr/bin/env python3
"""The scheduler's pattern against any Placement URL (stdlib only): each boot asks for
allocation candidates, then claims one of them for a new consumer, so every candidates
request follows writes (ringmaster renews its candidate snapshot after each).

Setup (untimed): P providers with VCPU 64 and MEMORY_MB 65,536. Timed: C workers each make
B boots: GET /allocation_candidates?resources=VCPU:1,MEMORY_MB:512&limit=20, then
PUT /allocations/{new uuid} with a random one of the candidates. Checks that every claim
is 204 and that the project's usages add up. Run it on an empty Placement. Exit 1 when a
check fails.

  python3 scripts/bench-boots.py URL [--providers 1000] [--boots 50] [--concurrency 8]
"""

import argparse
import http.client
import json
import random
import sys
import threading
import time
import urllib.parse
import uuid


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('url')
    parser.add_argument('--providers', type=int, default=1000)
    parser.add_argument('--boots', type=int, default=50, help='boots per worker')
    parser.add_argument('--concurrency', type=int, default=8)
    args = parser.parse_args()
    parsed = urllib.parse.urlparse(args.url)
    host, port, prefix = parsed.hostname, parsed.port or 80, parsed.path.rstrip('/')
    headers = {'x-auth-token': 'admin', 'content-type': 'application/json',
               'accept': 'application/json', 'openstack-api-version': 'placement 1.39'}

    def request(conn, method, path, body=None, version='1.39'):
        data = json.dumps(body) if body is not None else None
        conn.request(method, prefix + path, body=data,
                     headers=dict(headers, **{'openstack-api-version': 'placement ' + version}))
        response = conn.getresponse()
        return response.status, response.read()

    setup = http.client.HTTPConnection(host, port, timeout=300)
    for _ in range(args.providers):
        provider = str(uuid.uuid4())
        status, raw = request(setup, 'POST', '/resource_providers',
                              {'name': 'boots-' + provider, 'uuid': provider})
        if status != 200:
            sys.exit('creating a provider: %d %s' % (status, raw[:200]))
        status, raw = request(setup, 'PUT', '/resource_providers/%s/inventories' % provider,
                              {'resource_provider_generation': 0,
                               'inventories': {'VCPU': {'total': 64},
                                               'MEMORY_MB': {'total': 65536}}})
        if status != 200:
            sys.exit('setting inventory: %d %s' % (status, raw[:200]))

    statuses = {}
    latencies = []
    lock = threading.Lock()
    ready = threading.Barrier(args.concurrency + 1)

    def worker():
        conn = http.client.HTTPConnection(host, port, timeout=300)
        request(conn, 'GET', '/')
        ready.wait()
        for _ in range(args.boots):
            started = time.perf_counter()
            status, raw = request(
                conn, 'GET', '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512&limit=20')
            if status == 200:
                pick = random.choice(json.loads(raw)['allocation_requests'])['allocations']
                status, raw = request(conn, 'PUT', '/allocations/%s' % uuid.uuid4(),
                                      {'allocations': pick, 'project_id': 'boots',
                                       'user_id': 'boots', 'consumer_generation': None,
                                       'consumer_type': 'INSTANCE'})
            elapsed = time.perf_counter() - started
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
                latencies.append(elapsed)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(args.concurrency)]
    for thread in threads:
        thread.start()
    ready.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    latencies.sort()
    boots = args.boots * args.concurrency
    p99 = latencies[max(0, int(round(0.99 * len(latencies) + 0.5)) - 1)] * 1000
    print('boots    n=%-5d wall=%7.2fs %8.1f boots/s  p99=%8.2fms  %s' % (
        boots, wall, boots / wall, p99,
        ' '.join('%s=%d' % kv for kv in sorted(statuses.items()))))
    status, raw = request(setup, 'GET', '/usages?project_id=boots', version='1.9')
    used = json.loads(raw)['usages'] if status == 200 else {}
    ok = statuses == {204: boots} and used.get('VCPU') == boots and \
        used.get('MEMORY_MB') == 512 * boots
    print('#   check every claim 204, usages VCPU %s MEMORY_MB %s -> %s' % (
        used.get('VCPU'), used.get('MEMORY_MB'), 'OK' if ok else 'FAILED'))
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()

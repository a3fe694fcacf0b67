#!/usr/bin/env python3
"""Nested-provider Placement workload, for any Placement URL (stdlib only).

The companion of scripts/placement/bench.py for trees: T compute nodes, each a root with
two NUMA children (VCPU 16, MEMORY_MB 32768 each, trait HW_NUMA_ROOT), all in one aggregate
with a sharing storage pool (DISK_GB, MISC_SHARES_VIA_AGGREGATE). Phases, at concurrency C:

  setup    the trees, timed: 1 + 3T provider creations, inventories, traits, aggregates
  a        R x GET /allocation_candidates?resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10
           (the unsuffixed group spread over a tree and the pool: 4T candidates)
  b        R x GET /allocation_candidates?resources1=VCPU:2,MEMORY_MB:1024
                 &resources2=DISK_GB:10&group_policy=none (granular: 2T candidates)
  c        T x PUT /allocations/{c}: 2 VCPU and 1024 MB on a NUMA node, 10 GB on the pool
           (every claim also locks the shared pool)
  d        T x DELETE /allocations/{c}
  cleanup  (untimed) every provider, children first

Checks: the candidate counts, every claim 204, the pool's DISK_GB usage 10T after c.
Run it on an empty Placement (RESET first). Exit 1 when a check fails.

  python3 scripts/bench-nested.py URL [--trees 200] [--repeat 50] [--concurrency 8]
"""

import argparse
import http.client
import json
import queue
import sys
import threading
import time
import urllib.parse
import uuid

NUMA_TRAIT = 'HW_NUMA_ROOT'
SHARING = 'MISC_SHARES_VIA_AGGREGATE'


class Http(object):
    def __init__(self, url, mv):
        parsed = urllib.parse.urlparse(url)
        self.host, self.port = parsed.hostname, parsed.port or 80
        self.prefix = parsed.path.rstrip('/')
        self.mv = mv
        self.local = threading.local()

    def request(self, method, path, body=None):
        headers = {'x-auth-token': 'admin', 'accept': 'application/json',
                   'openstack-api-version': 'placement %s' % self.mv}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers['content-type'] = 'application/json'
        for attempt in (0, 1):
            conn = getattr(self.local, 'conn', None)
            if conn is None:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=300)
                self.local.conn = conn
            try:
                started = time.perf_counter()
                conn.request(method, self.prefix + path, body=data, headers=headers)
                response = conn.getresponse()
                raw = response.read()
                return response.status, raw, time.perf_counter() - started
            except (http.client.RemoteDisconnected, ConnectionResetError,
                    BrokenPipeError, http.client.CannotSendRequest):
                conn.close()
                self.local.conn = None
                if attempt:
                    raise


def run(client, name, jobs, concurrency):
    """jobs: (method, path, body); returns (summary dict, list of (status, raw))."""
    work = queue.Queue()
    for index, job in enumerate(jobs):
        work.put((index, job))
    results = [None] * len(jobs)
    latencies = []
    lock = threading.Lock()

    workers = max(1, min(concurrency, len(jobs)))
    ready = threading.Barrier(workers + 1)

    def worker():
        # Each worker opens its connection (a version-document GET) before the clock starts:
        # a phase measures its requests, not thread starts and TCP handshakes.
        client.request('GET', '/')
        ready.wait()
        while True:
            try:
                index, (method, path, body) = work.get_nowait()
            except queue.Empty:
                return
            status, raw, elapsed = client.request(method, path, body)
            results[index] = (status, raw)
            with lock:
                latencies.append(elapsed)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(workers)]
    for thread in threads:
        thread.start()
    ready.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    latencies.sort()

    def pct(p):
        k = max(0, min(len(latencies) - 1, int(round(p / 100.0 * len(latencies) + 0.5)) - 1))
        return latencies[k] * 1000 if latencies else float('nan')

    statuses = {}
    for status, _ in results:
        statuses[status] = statuses.get(status, 0) + 1
    summary = {'phase': name, 'requests': len(jobs), 'wall_s': round(wall, 3),
               'req_per_s': round(len(jobs) / wall, 1) if wall else None,
               'p50_ms': round(pct(50), 2), 'p99_ms': round(pct(99), 2),
               'statuses': statuses}
    print('%-8s n=%-5d wall=%7.2fs %8.1f req/s  p50=%8.2fms p99=%8.2fms  %s' % (
        name, summary['requests'], wall, summary['req_per_s'] or 0, summary['p50_ms'],
        summary['p99_ms'], ' '.join('%s=%d' % kv for kv in sorted(statuses.items()))))
    sys.stdout.flush()
    return summary, results


def expect(condition, what):
    print('#   check %s -> %s' % (what, 'OK' if condition else 'FAILED'))
    return condition


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('url')
    parser.add_argument('--trees', type=int, default=200)
    parser.add_argument('--repeat', type=int, default=50)
    parser.add_argument('--concurrency', type=int, default=8)
    parser.add_argument('--microversion', default='1.39')
    parser.add_argument('--json', help='write the phase summaries here')
    args = parser.parse_args()
    client = Http(args.url, args.microversion)
    trees, concurrency = args.trees, args.concurrency
    tag = uuid.uuid4().hex[:8]
    aggregate = str(uuid.uuid4())
    pool = str(uuid.uuid4())
    roots = [str(uuid.uuid4()) for _ in range(trees)]
    numas = [[str(uuid.uuid4()), str(uuid.uuid4())] for _ in range(trees)]
    ok = True
    summaries = []
    print('# nested bench: url=%s trees=%d concurrency=%d repeat=%d microversion=%s' % (
        args.url, trees, concurrency, args.repeat, args.microversion))

    setup = [('POST', '/resource_providers', {'name': 'pool-%s' % tag, 'uuid': pool})]
    setup += [('POST', '/resource_providers', {'name': 'cn-%s-%d' % (tag, t), 'uuid': root})
              for t, root in enumerate(roots)]
    summary, results = run(client, 'setup-1', setup, concurrency)
    summaries.append(summary)
    children = [('POST', '/resource_providers',
                 {'name': 'numa-%s-%d-%d' % (tag, t, n), 'uuid': numa,
                  'parent_provider_uuid': roots[t]})
                for t in range(trees) for n, numa in enumerate(numas[t])]
    summary, results = run(client, 'setup-2', children, concurrency)
    summaries.append(summary)
    links = [('PUT', '/resource_providers/%s/inventories' % pool,
              {'resource_provider_generation': 0,
               'inventories': {'DISK_GB': {'total': 100000, 'max_unit': 1000}}})]
    links += [('PUT', '/resource_providers/%s/inventories' % numa,
               {'resource_provider_generation': 0,
                'inventories': {'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 32768}}})
              for t in range(trees) for numa in numas[t]]
    summary, results = run(client, 'setup-3', links, concurrency)
    summaries.append(summary)
    marks = [('PUT', '/resource_providers/%s/traits' % pool,
              {'resource_provider_generation': 1, 'traits': [SHARING]})]
    marks += [('PUT', '/resource_providers/%s/traits' % numa,
               {'resource_provider_generation': 1, 'traits': [NUMA_TRAIT]})
              for t in range(trees) for numa in numas[t]]
    marks += [('PUT', '/resource_providers/%s/aggregates' % root,
               {'resource_provider_generation': 0, 'aggregates': [aggregate]})
              for root in roots]
    summary, results = run(client, 'setup-4', marks, concurrency)
    summaries.append(summary)
    status, _, _ = client.request('PUT', '/resource_providers/%s/aggregates' % pool,
                                  {'resource_provider_generation': 2,
                                   'aggregates': [aggregate]})
    ok &= expect(status == 200, 'pool joins the aggregate (status %d)' % status)

    for name, query, wanted in (
            ('a', 'resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10', 4 * trees),
            ('b', 'resources1=VCPU:2,MEMORY_MB:1024&resources2=DISK_GB:10'
                  '&group_policy=none', 2 * trees)):
        path = '/allocation_candidates?' + query
        status, raw, _ = client.request('GET', path)
        found = len(json.loads(raw).get('allocation_requests', [])) if status == 200 else -1
        ok &= expect(found == wanted, '%s candidates %d expected %d' % (name, found, wanted))
        summary, _ = run(client, name, [('GET', path, None)] * args.repeat, concurrency)
        summaries.append(summary)

    consumers = [str(uuid.uuid4()) for _ in range(trees)]
    claims = [('PUT', '/allocations/%s' % consumer,
               {'allocations': {numas[t][0]: {'resources': {'VCPU': 2, 'MEMORY_MB': 1024}},
                                pool: {'resources': {'DISK_GB': 10}}},
                'project_id': 'nested-%s' % tag, 'user_id': 'nested',
                'consumer_generation': None, 'consumer_type': 'INSTANCE'})
              for t, consumer in enumerate(consumers)]
    summary, results = run(client, 'c', claims, concurrency)
    summaries.append(summary)
    ok &= expect(summary['statuses'] == {204: trees}, 'every claim 204')
    status, raw, _ = client.request('GET', '/resource_providers/%s/usages' % pool)
    used = json.loads(raw)['usages'].get('DISK_GB') if status == 200 else None
    ok &= expect(used == 10 * trees, 'pool DISK_GB usage %s expected %d' % (used, 10 * trees))
    summary, _ = run(client, 'd', [('DELETE', '/allocations/%s' % c, None) for c in consumers],
                     concurrency)
    summaries.append(summary)

    for numa in [numa for pair in numas for numa in pair]:
        client.request('DELETE', '/resource_providers/%s' % numa)
    for provider in roots + [pool]:
        client.request('DELETE', '/resource_providers/%s' % provider)
    if args.json:
        with open(args.json, 'w') as out:
            json.dump({'url': args.url, 'trees': trees, 'phases': summaries}, out, indent=1)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())

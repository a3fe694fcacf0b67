#!/usr/bin/env python3
"""Allocation-candidate explosions, for any Placement URL (stdlib only; issue 25, item 1).

Two layouts, each on an emptied Placement (RESET_CMD runs before each):

  wide   one root with 10 children of VCPU 1000 each: G granular groups of VCPU:1
         (group_policy=none) have 10^G combinations
  many   200 roots with 4 children of VCPU 16 each: G groups give 200 x 4^G combinations

For G in 4, 6, 8, 10 (wide) and 4, 6 (many), with limit=1 and without, it times one
GET /allocation_candidates and, meanwhile, samples the server's resident memory (the processes
given by --pid, with --children their descendants too, every 20 ms) and a health URL's latency (every 100 ms).

  python3 scripts/bench-candidates.py URL --pid PID [--children] [--health URL] [--timeout 120]

Prints one table row per query: groups, limit, status, candidates, seconds, peak RSS (MB),
health checks (worst latency, failures).
"""

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse

MV = '1.36'


class Client(object):
    def __init__(self, url, timeout):
        parsed = urllib.parse.urlparse(url)
        self.host, self.port = parsed.hostname, parsed.port or 80
        self.prefix = parsed.path.rstrip('/')
        self.timeout = timeout

    def request(self, method, path, body=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        headers = {'x-auth-token': 'admin', 'accept': 'application/json',
                   'openstack-api-version': 'placement %s' % MV}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers['content-type'] = 'application/json'
        try:
            conn.request(method, self.prefix + path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
            return response.status, (json.loads(raw) if raw else None)
        except (OSError, http.client.HTTPException) as error:
            return None, str(error)
        finally:
            conn.close()


def tree(client, index, children, vcpus):
    root = '%08x-0000-4000-8000-%012x' % (0xa0000000 + index, 0)
    status, body = client.request('POST', '/resource_providers',
                                  {'name': 'root-%d' % index, 'uuid': root})
    assert status == 200, (status, body)
    for child in range(1, children + 1):
        uuid = '%08x-0000-4000-8000-%012x' % (0xa0000000 + index, child)
        status, body = client.request('POST', '/resource_providers', {
            'name': 'root-%d-child-%d' % (index, child), 'uuid': uuid,
            'parent_provider_uuid': root})
        assert status == 200, (status, body)
        status, body = client.request(
            'PUT', '/resource_providers/%s/inventories' % uuid,
            {'resource_provider_generation': 0,
             'inventories': {'VCPU': {'total': vcpus}}})
        assert status == 200, (status, body)


def rss_mb(pids, descendants):
    """Resident memory of `pids` (and all their descendants when asked), in MB."""
    children = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as stat:
                ppid = int(stat.read().rsplit(')', 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    total, todo, seen = 0, list(pids), set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        if descendants:
            todo.extend(children.get(pid, []))
        try:
            with open('/proc/%d/status' % pid) as status:
                for line in status:
                    if line.startswith('VmRSS:'):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024.0


class Watch(object):
    """Samples RSS and a health URL while a query runs."""

    def __init__(self, pids, descendants, health):
        self.pids, self.descendants, self.health = pids, descendants, health
        self.peak, self.worst, self.failed, self.checks = 0.0, 0.0, 0, 0
        self.running = True

    def memory(self):
        while self.running:
            self.peak = max(self.peak, rss_mb(self.pids, self.descendants))
            time.sleep(0.02)

    def probe(self):
        parsed = urllib.parse.urlparse(self.health)
        while self.running:
            started = time.perf_counter()
            try:
                conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=5)
                conn.request('GET', parsed.path or '/')
                ok = conn.getresponse().status < 500
                conn.close()
            except (OSError, http.client.HTTPException):
                ok = False
            took = time.perf_counter() - started
            self.checks += 1
            self.worst = max(self.worst, took)
            if not ok:
                self.failed += 1
            time.sleep(0.1)

    def __enter__(self):
        self.threads = [threading.Thread(target=self.memory),
                        threading.Thread(target=self.probe)]
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_):
        self.running = False
        for thread in self.threads:
            thread.join()


def query(client, args, layout, groups, limit):
    parts = ['resources%d=VCPU:1' % n for n in range(1, groups + 1)]
    parts.append('group_policy=none')
    if limit:
        parts.append('limit=%d' % limit)
    path = '/allocation_candidates?' + '&'.join(parts)
    with Watch(args.pid, args.children, args.health) as watch:
        started = time.perf_counter()
        status, body = client.request('GET', path)
        took = time.perf_counter() - started
    found = len(body['allocation_requests']) if isinstance(body, dict) and \
        'allocation_requests' in body else '-'
    print('| %s | %d | %s | %s | %s | %.2f | %.0f | %.0f ms, %d of %d failed |' % (
        layout, groups, limit or 'none', status, found, took, watch.peak,
        watch.worst * 1000, watch.failed, watch.checks))
    sys.stdout.flush()


def reset():
    command = os.environ.get('RESET_CMD')
    if command:
        subprocess.run(command, shell=True, check=True, stdout=subprocess.DEVNULL)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('url')
    parser.add_argument('--pid', type=int, action='append', required=True)
    parser.add_argument('--children', action='store_true',
                        help='count the processes\' descendants too (gunicorn\'s workers)')
    parser.add_argument('--health', help='health URL (default: the Placement root)')
    parser.add_argument('--timeout', type=float, default=120)
    parser.add_argument('--wide-groups', default='4,6,8,10')
    parser.add_argument('--many-groups', default='4,6')
    args = parser.parse_args()
    args.health = args.health or args.url
    client = Client(args.url, args.timeout)
    print('| layout | groups | limit | status | candidates | seconds | peak RSS MB | health |')
    print('|---|---:|---|---|---:|---:|---:|---|')
    reset()
    tree(client, 0, 10, 1000)
    for groups in [int(g) for g in args.wide_groups.split(',') if g]:
        for limit in (1, None):
            query(client, args, 'wide', groups, limit)
    reset()
    for index in range(200):
        tree(client, index, 4, 16)
    for groups in [int(g) for g in args.many_groups.split(',') if g]:
        for limit in (1, None):
            query(client, args, 'many', groups, limit)


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""Memory after floods (issue 25, item 7): does a ringmaster process give memory back once a
flood of connections or event streams ends? Stdlib only.

Starts `ringmaster demo` (the given binary, a throwaway data directory, its file limit raised so
that it takes the connections), notes its resident memory at rest, then runs each flood three
times and after each reports the memory at the flood's end and how long it took to come back
within 1.5x of the memory at rest (or what it was after --settle seconds):

  connections  N clients connecting at once, each sending one request, reading the answer and
               holding the connection 2 s before it hangs up (10,300 by default)
  streams      N event streams from one address at once (2,000), held 2 s, then closed

  python3 scripts/bench-floods.py --binary target/release/ringmaster [--connections 10300]
      [--streams 2000] [--settle 60]
"""

import argparse
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time


def rss_mb(pid):
    with open('/proc/%d/status' % pid) as status:
        for line in status:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return 0.0


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def request(port, path, hold=0.0, results=None):
    try:
        sock = socket.create_connection(('127.0.0.1', port), timeout=30)
        sock.sendall(('GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % (path, port)).encode())
        data = sock.recv(4096)
        if hold:
            time.sleep(hold)
        sock.close()
        if results is not None:
            results.append(data.split(b' ', 2)[1] if data else b'-')
    except OSError as error:
        if results is not None:
            results.append(str(error.errno).encode())


def flood(port, count, path, hold):
    results, threads = [], []
    for _ in range(count):
        thread = threading.Thread(target=request, args=(port, path, hold, results))
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    summary = {}
    for status in results:
        summary[status.decode()] = summary.get(status.decode(), 0) + 1
    return summary


def settle(pid, rest, limit):
    started = time.time()
    while time.time() - started < limit:
        if rss_mb(pid) <= 1.5 * rest:
            return time.time() - started
        time.sleep(0.5)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--binary', default='target/release/ringmaster')
    parser.add_argument('--connections', type=int, default=10300)
    parser.add_argument('--streams', type=int, default=2000)
    parser.add_argument('--settle', type=float, default=60)
    args = parser.parse_args()
    raise_nofile()
    threading.stack_size(256 * 1024)
    work = tempfile.mkdtemp(prefix='ringmaster-floods-')
    os.chmod(work, 0o755)
    port = socket.socket()
    port.bind(('127.0.0.1', 0))
    number = port.getsockname()[1]
    port.close()
    server = subprocess.Popen(
        [args.binary, 'demo', '--bind', '127.0.0.1:%d' % number, '--data-dir', work + '/pg'],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, RUST_LOG='warn'))
    try:
        for _ in range(300):
            try:
                socket.create_connection(('127.0.0.1', number), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        time.sleep(5)
        for _ in range(50):
            request(number, '/api/v1/hosts')
        rest = rss_mb(server.pid)
        print('| flood | round | answers | RSS at rest MB | RSS at its end MB | back within 1.5x after |')
        print('|---|---:|---|---:|---:|---|')
        for kind, count, path, hold in [
                ('connections', args.connections, '/api/v1/hosts', 2.0),
                ('streams', args.streams, '/api/v1/events', 2.0)]:
            for round_ in (1, 2, 3):
                answers = flood(number, count, path, hold)
                end = rss_mb(server.pid)
                took = settle(server.pid, rest, args.settle)
                shown = '%.1f s' % took if took is not None else \
                    'not within %.0f s (%.0f MB)' % (args.settle, rss_mb(server.pid))
                print('| %s x %d | %d | %s | %.0f | %.0f | %s |' % (
                    kind, count, round_, answers, rest, end, shown))
                sys.stdout.flush()
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()

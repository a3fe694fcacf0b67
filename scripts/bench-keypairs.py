#!/usr/bin/env python3
"""Memory held by key pairs (issue 44, item 4): what importing and listing key pairs costs a
ringmaster process. Stdlib only.

Each scenario starts its own `ringmaster demo` (the given binary, a throwaway data directory),
notes its resident memory at rest, imports keys as one user and lists them, once with one
client and once with four at once, noting the resident memory and its peak (VmHWM) after each:

  junk     ten 15 MB `ssh-rsa` "keys" (a header and zeros), as the issue's report sent them
           (a bounded process refuses each before it holds the body: 413)
  largest  100 of the largest keys a bounded process takes: a 16,384-bit RSA key (e = 65537,
           a random odd modulus with its top bit set) with a comment up to the 16 KiB line

  python3 scripts/bench-keypairs.py --binary target/release/ringmaster [--scenario junk]
"""

import argparse
import base64
import http.client
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time

TOKEN = 'alice:p1'
LINE_LIMIT = 16 * 1024


def status_mb(pid, field):
    with open('/proc/%d/status' % pid) as status:
        for line in status:
            if line.startswith(field + ':'):
                return int(line.split()[1]) / 1024.0
    return 0.0


def call(port, method, path, body=None):
    connection = http.client.HTTPConnection('127.0.0.1', port, timeout=600)
    headers = {'X-Auth-Token': TOKEN, 'OpenStack-API-Version': 'compute 2.92'}
    if body is not None:
        headers['Content-Type'] = 'application/json'
    try:
        connection.request(method, '/compute/v2.1' + path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        return response.status, len(data)
    except OSError as error:
        return 'error %s' % (error.errno or type(error).__name__), 0
    finally:
        connection.close()


def string(data):
    return struct.pack('>I', len(data)) + data


def largest_key(rng):
    modulus = rng.getrandbits(16384) | (1 << 16383) | 1
    blob = (string(b'ssh-rsa') + string(b'\x01\x00\x01')
            + string(b'\x00' + modulus.to_bytes(2048, 'big')))
    line = 'ssh-rsa ' + base64.b64encode(blob).decode() + ' '
    return line + 'c' * (LINE_LIMIT - len(line))


def junk_key():
    # 15 + 1 + 15 MiB base64 characters: a whole number of groups, so it decodes.
    return 'ssh-rsa AAAAB3NzaC1yc2E' + 'A' * (15 * 1024 * 1024 + 1) + ' junk@example'


def lists(port, clients):
    results, threads = [], []
    for _ in range(clients):
        thread = threading.Thread(
            target=lambda: results.append(call(port, 'GET', '/os-keypairs')))
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    return results


def summary(answers):
    counted = {}
    for status in answers:
        counted[str(status)] = counted.get(str(status), 0) + 1
    return ', '.join('%s x%d' % item for item in sorted(counted.items()))


def start(binary, work):
    probe = socket.socket()
    probe.bind(('127.0.0.1', 0))
    port = probe.getsockname()[1]
    probe.close()
    server = subprocess.Popen(
        [binary, 'demo', '--bind', '127.0.0.1:%d' % port, '--data-dir', work + '/pg'],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, RUST_LOG='warn'))
    for _ in range(600):
        if call(port, 'GET', '/os-keypairs')[0] == 200:
            return server, port
        time.sleep(0.2)
    server.kill()
    raise SystemExit('ringmaster demo did not answer')


def scenario(binary, name):
    work = tempfile.mkdtemp(prefix='ringmaster-keypairs-')
    os.chmod(work, 0o755)
    server, port = start(binary, work)
    try:
        time.sleep(3)
        rest = status_mb(server.pid, 'VmRSS')
        rng = random.Random(44)
        count, make = (10, lambda: junk_key()) if name == 'junk' else (100, lambda: largest_key(rng))
        answers = []
        for index in range(count):
            body = json.dumps({'keypair': {'name': 'k%d' % index, 'public_key': make()}})
            answers.append(call(port, 'POST', '/os-keypairs', body)[0])
        imported = status_mb(server.pid, 'VmRSS')
        rows = [name, summary(answers), '%.0f' % rest, '%.0f' % imported]
        for clients in (1, 4):
            listed = lists(port, clients)
            rows.append('%s (%s kB)' % (summary(s for s, _ in listed),
                                        max(size for _, size in listed) // 1024))
            rows.append('%.0f / %.0f' % (status_mb(server.pid, 'VmRSS'),
                                         status_mb(server.pid, 'VmHWM')))
        print('| ' + ' | '.join(rows) + ' |', flush=True)
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--binary', default='target/release/ringmaster')
    parser.add_argument('--scenario', choices=['junk', 'largest', 'both'], default='both')
    args = parser.parse_args()
    print('| scenario | imports | RSS at rest MB | after imports MB | 1 list | RSS / peak MB '
          '| 4 lists at once | RSS / peak MB |')
    print('|---|---|---:|---:|---|---:|---|---:|')
    for name in (['junk', 'largest'] if args.scenario == 'both' else [args.scenario]):
        scenario(args.binary, name)


if __name__ == '__main__':
    main()

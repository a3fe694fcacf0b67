#!/usr/bin/env python3
"""What TLS costs ringmaster (issue 27): the handshake, and Placement's work over https vs http.

Starts two `ringmaster demo` processes of the same binary on their own data directories, one
plain and one with --tls-cert/--tls-key (a CA and certificate made here with openssl), then for
each: N new connections, each a handshake and one GET /healthz (the handshake's cost); and
Placement's phases on one kept-alive connection — create P resource providers, set their
inventories, ask for allocation candidates Q times, write Q allocations, delete them. Prints
seconds per phase for http and https and their ratio.

    python3 scripts/bench-tls.py [--binary target/release/ringmaster] [--connections 500]
                                 [--providers 200] [--queries 200]
"""
import argparse
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import uuid

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39",
           "Content-Type": "application/json", "Accept": "application/json"}


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certificate(work):
    ca, key, cert = (os.path.join(work, name) for name in ("ca.pem", "key.pem", "cert.pem"))
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-days", "2", "-subj", "/CN=bench-ca", "-keyout", os.path.join(work, "ca-key.pem"), "-out", ca)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", key, "-out", os.path.join(work, "cert.csr"))
    with open(os.path.join(work, "ext"), "w") as ext:
        ext.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", os.path.join(work, "cert.csr"), "-CA", ca, "-CAkey",
            os.path.join(work, "ca-key.pem"), "-CAcreateserial", "-days", "2", "-extfile",
            os.path.join(work, "ext"), "-out", cert)
    return ca, cert, key


def start(binary, work, name, tls):
    args = [binary, "demo", "--bind", "127.0.0.1:0", "--data-dir", os.path.join(work, name),
            "--hosts", "cmp-1", "--nodes", "1"]
    if tls:
        args += ["--tls-cert", tls[0], "--tls-key", tls[1]]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env=dict(os.environ, RUST_LOG="error"))
    for line in process.stdout:
        if "listening on" in line:
            return process, int(line.strip().rstrip("/").rsplit(":", 1)[1])
    raise SystemExit(f"{name} did not start")


def connection(port, context):
    if context:
        return http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    return http.client.HTTPConnection("127.0.0.1", port, timeout=30)


def handshakes(port, context, count):
    started = time.perf_counter()
    for _ in range(count):
        conn = connection(port, context)
        conn.request("GET", "/healthz")
        conn.getresponse().read()
        conn.close()
    return time.perf_counter() - started


def call(conn, method, path, body=None):
    conn.request(method, "/placement" + path, body=None if body is None else json.dumps(body),
                 headers=HEADERS)
    response = conn.getresponse()
    data = response.read()
    if response.status >= 400:
        raise SystemExit(f"{method} {path}: {response.status} {data[:200]}")
    return json.loads(data) if data else None


def placement_phases(port, context, providers, queries):
    conn = connection(port, context)
    times = {}
    ids = [str(uuid.uuid4()) for _ in range(providers)]
    started = time.perf_counter()
    for rp in ids:
        call(conn, "POST", "/resource_providers", {"uuid": rp, "name": f"bench-{rp}"})
    times["create providers"] = time.perf_counter() - started
    started = time.perf_counter()
    for rp in ids:
        call(conn, "PUT", f"/resource_providers/{rp}/inventories", {
            "resource_provider_generation": 0,
            "inventories": {"VCPU": {"total": 64}, "MEMORY_MB": {"total": 262144}}})
    times["set inventories"] = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(queries):
        call(conn, "GET", "/allocation_candidates?resources=VCPU:2,MEMORY_MB:4096&limit=10")
    times["allocation candidates"] = time.perf_counter() - started
    consumers = [str(uuid.uuid4()) for _ in range(queries)]
    started = time.perf_counter()
    for index, consumer in enumerate(consumers):
        call(conn, "PUT", f"/allocations/{consumer}", {
            "allocations": {ids[index % providers]: {"resources": {"VCPU": 2, "MEMORY_MB": 4096}}},
            "project_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4()),
            "consumer_generation": None, "consumer_type": "INSTANCE"})
    times["write allocations"] = time.perf_counter() - started
    started = time.perf_counter()
    for consumer in consumers:
        call(conn, "DELETE", f"/allocations/{consumer}")
    for rp in ids:
        call(conn, "DELETE", f"/resource_providers/{rp}")
    times["delete"] = time.perf_counter() - started
    conn.close()
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default="target/release/ringmaster")
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--providers", type=int, default=200)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="ringmaster-bench-tls.")
    # The embedded PostgreSQL runs as its own user when started by root: it must reach its folder.
    os.chmod(work, 0o755)
    processes = []
    try:
        ca, cert, key = make_certificate(work)
        context = ssl.create_default_context(cafile=ca)
        plain, plain_port = start(args.binary, work, "plain", None)
        processes.append(plain)
        secure, secure_port = start(args.binary, work, "tls", (cert, key))
        processes.append(secure)
        rows = []
        http_seconds = handshakes(plain_port, None, args.connections)
        https_seconds = handshakes(secure_port, context, args.connections)
        rows.append((f"{args.connections} new connections + GET /healthz", http_seconds, https_seconds))
        plain_phases = placement_phases(plain_port, None, args.providers, args.queries)
        secure_phases = placement_phases(secure_port, context, args.providers, args.queries)
        for phase in plain_phases:
            rows.append((phase, plain_phases[phase], secure_phases[phase]))
        print(f"{'phase':45} {'http s':>8} {'https s':>8} {'ratio':>6}")
        for name, plain_s, secure_s in rows:
            print(f"{name:45} {plain_s:8.3f} {secure_s:8.3f} {secure_s / plain_s:6.2f}")
        per = (https_seconds - http_seconds) / args.connections * 1000
        print(f"TLS handshake: {per:.2f} ms more per new connection")
    finally:
        for process in processes:
            process.terminate()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

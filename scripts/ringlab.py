"""What scripts/chaos, scripts/scale and scripts/bench-failover.py share (stdlib only): a
throwaway PostgreSQL cluster on a unix socket, or a 3-member Patroni cluster run by
scripts/patroni, `ringmaster serve` processes, and a small HTTP client.

Everything runs on 127.0.0.1 and a unix socket under /dev/shm (or the temp folder); run as
root, the PostgreSQL server runs as the `postgres` user.
"""

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request


def parse_duration(text):
    """Parses 60s, 10m, 500ms, 1h into seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", text)
    if not match:
        raise ValueError("write durations as 60s, 10m, 1h")
    value, unit = float(match.group(1)), match.group(2) or "s"
    return value * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


class Postgres:
    """A throwaway cluster on a unix socket, run as the postgres user when we are root."""

    def __init__(self, root, max_connections=300):
        self.bin = self.find_bin()
        self.dir = os.path.join(root, "pg")
        self.log = os.path.join(root, "postgres.log")
        self.as_root = os.geteuid() == 0
        self.max_connections = max_connections
        os.makedirs(self.dir)
        if self.as_root:
            shutil.chown(root, "postgres")
            shutil.chown(self.dir, "postgres")
        self.run("initdb", "-D", self.dir, "-U", "postgres", "-A", "trust", "--no-sync",
                 "--encoding=UTF8", "--no-locale")
        self.start()
        self.psql("CREATE DATABASE ringmaster", database="postgres")
        self.url = f"postgresql://postgres@/ringmaster?host={self.dir}&port=5432"

    @staticmethod
    def find_bin():
        for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
            if os.path.exists(os.path.join(candidate, "pg_ctl")):
                return candidate
        found = shutil.which("pg_ctl")
        if found:
            return os.path.dirname(found)
        sys.exit("PostgreSQL server binaries (pg_ctl, initdb) not found: run scripts/bootstrap")

    def command(self, program, *args):
        path = os.path.join(self.bin, program)
        if self.as_root:
            return ["runuser", "-u", "postgres", "--", path, *args]
        return [path, *args]

    def run(self, program, *args):
        subprocess.run(self.command(program, *args), check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    def options(self):
        # No synchronous_commit=off: a crash recovery would lose acknowledged commits.
        return (f"-k {self.dir} -c listen_addresses= -c port=5432 "
                f"-c max_connections={self.max_connections} -c fsync=off")

    def start(self):
        self.run("pg_ctl", "start", "-w", "-D", self.dir, "-l", self.log, "-o", self.options())

    def restart(self):
        self.run("pg_ctl", "restart", "-w", "-m", "fast", "-D", self.dir, "-l", self.log,
                 "-o", self.options())

    def stop(self):
        subprocess.run(self.command("pg_ctl", "stop", "-m", "immediate", "-D", self.dir),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def postmaster_pid(self):
        with open(os.path.join(self.dir, "postmaster.pid")) as pid_file:
            return int(pid_file.readline())

    def pids(self):
        """The postmaster and every process it started."""
        postmaster = self.postmaster_pid()
        children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(postmaster)],
                                  capture_output=True, text=True).stdout.split()
        return [postmaster, *map(int, children)]

    def psql(self, sql, database="ringmaster", timeout=120):
        psql = shutil.which("psql") or os.path.join(self.bin, "psql")
        done = subprocess.run(
            [psql, "-h", self.dir, "-U", "postgres", "-d", database, "-AtX", "-q", "-c", sql],
            capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip())
        return [line.split("|") for line in done.stdout.splitlines() if line]


class PatroniCluster:
    """A 3-member Patroni cluster (scripts/patroni) in `root`, on ports from `port_base`: the
    same psql/restart/stop as Postgres, and the failovers. Each switch returns scripts/patroni's
    JSON line (lost, leader, lost_at, promoted_at, promoted_after_s)."""

    SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "patroni")

    def __init__(self, root, port_base, ttl=30, loop_wait=10, retry_timeout=10):
        self.env = dict(os.environ, PATRONI_STATE_DIR=os.path.join(root, "patroni"),
                        PATRONI_PORT_BASE=str(port_base))
        self.url = self.run("start", "--ttl", str(ttl), "--loop-wait", str(loop_wait),
                            "--retry-timeout", str(retry_timeout))

    @staticmethod
    def available():
        """scripts/patroni can start a cluster here (`check`), with nftables for the silent
        failover and root to use it."""
        if os.geteuid() != 0 or not shutil.which("nft"):
            return False
        return subprocess.run([PatroniCluster.SCRIPT, "check"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0

    def run(self, *args, timeout=600):
        done = subprocess.run([self.SCRIPT, *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"scripts/patroni {' '.join(args)} failed: "
                               f"{done.stderr.strip()[-2000:]}")
        return done.stdout.strip()

    def switch(self, *args):
        return json.loads(self.run(*args).splitlines()[-1])

    def switchover(self):
        return self.switch("switchover")

    def failover(self, silent=False):
        return self.switch("failover", *(["--silent"] if silent else []))

    def recover(self):
        self.run("recover")

    def restart(self):
        self.run("restart")

    def stop(self, keep=False):
        try:
            self.run("stop", *(["--keep"] if keep else []), timeout=120)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            log(f"patroni stop: {error}")

    def psql(self, sql, database="ringmaster"):
        """On the primary, whichever member it is (the multi-host URL, read-write)."""
        psql = shutil.which("psql") or os.path.join(Postgres.find_bin(), "psql")
        url = self.url.replace("/ringmaster?", f"/{database}?", 1)
        done = subprocess.run([psql, url, "-AtX", "-q", "-c", sql], capture_output=True,
                              text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip())
        return [line.split("|") for line in done.stdout.splitlines() if line]


class Process:
    """One `ringmaster serve` running `hosts`, with `flags`; restartable."""

    def __init__(self, index, binary, url, root, hosts, flags, nodes=None):
        self.index, self.binary, self.url, self.root = index, binary, url, root
        self.hosts, self.flags, self.nodes = hosts, flags, nodes
        self.popen = None
        self.address = None
        self.state = "down"  # up | stopped | killed
        self.log_path = os.path.join(root, f"ringmaster-{index}.log")

    def start(self, timeout=300):
        args = [self.binary, "serve", "--bind", "127.0.0.1:0", "--hosts", ",".join(self.hosts),
                *self.flags]
        if self.nodes:
            args += ["--nodes", str(self.nodes)]
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("RINGMASTER_") and k != "DATABASE_URL"}
        env.update({"DATABASE_URL": self.url, "RUST_LOG": env.get("RUST_LOG", "warn")})
        stderr = open(self.log_path, "a")
        self.popen = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, env=env,
                                      text=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            line = self.popen.stdout.readline()
            if not line:
                if self.popen.poll() is not None:
                    return False
                continue
            match = re.search(r"listening on http://([^/]+)/", line)
            if match:
                self.address = match.group(1)
                self.state = "up"
                threading.Thread(target=self.drain_stdout, daemon=True).start()
                return True
        return False

    def drain_stdout(self):
        popen = self.popen
        for _ in popen.stdout:
            pass

    def signal(self, which):
        if self.popen and self.popen.poll() is None:
            os.kill(self.popen.pid, which)

    def kill(self):
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        if self.popen:
            self.popen.wait()
        self.state = "killed"

    def exited(self):
        return self.state == "up" and self.popen is not None and self.popen.poll() is not None

    def log_lines(self):
        try:
            with open(self.log_path, errors="replace") as handle:
                return handle.read().splitlines()
        except OSError:
            return []


def http(address, method, path, body=None, timeout=10, headers=None):
    """One request; returns (status or None, decoded JSON or text or the error)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://{address}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode()
            return response.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, text
    except (urllib.error.URLError, OSError, ValueError) as error:
        return None, str(error)


def host_counts(address):
    status, hosts = http(address, "GET", "/api/v1/hosts", timeout=30)
    if status != 200:
        return None
    return {host["host"]: host["nodes"] for host in hosts}


def wait_all_owned(address, nodes, started):
    while True:
        counts = host_counts(address)
        if counts is not None and sum(counts.values()) >= nodes:
            return time.time() - started
        if time.time() - started > 900:
            sys.exit("the nodes were not all owned within 15 minutes")
        time.sleep(0.2)


def wait_reported(postgres, nodes):
    """Waits until every node's inventory has been reported once."""
    deadline = time.time() + 600
    while time.time() < deadline:
        reported = int(postgres.psql("SELECT count(*) FROM inventories")[0][0])
        if reported >= nodes:
            return
        time.sleep(1)
    sys.exit("the inventories were not all reported within 10 minutes")


def cpu_seconds(pids):
    """User + system CPU seconds the processes `pids` have used so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
        except (OSError, IndexError, ValueError):
            pass
    return total


def build(repo, release=False):
    """Builds the ringmaster binary; returns its path."""
    args = ["cargo", "build", "--quiet", "--bin", "ringmaster"]
    if release:
        args.append("--release")
    subprocess.run(args, cwd=repo, check=True)
    return os.path.join(repo, "target", "release" if release else "debug", "ringmaster")

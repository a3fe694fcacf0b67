#!/usr/bin/env python3
"""Runs Placement 16.0.0's own gabbi files against a live Placement API (ringmaster's, or the
real Placement's) with `gabbi-run`, one file at a time:

    gabbits.py URL [FILE ...]

FILE is a path, or the name of one of the wheel's files with or without `.yaml`; none: all 79.
Before each file it runs $RESET_CMD (every file expects an empty Placement: the standard
classes and traits only), then makes the data of the fixture the file names
(`fixtures.py`), then runs the file with the fixture's variables. It prints
`NAME: passed P failed F [skipped S]` per file and `P passed, F failed[, S skipped]` at the end,
and exits 1 when anything failed.

First use (needs python3 with venv, and PyPI): a venv with gabbi 4.2.3, pinned by
`constraints.txt` beside this script, and the files of the openstack-placement 16.0.0 wheel
(downloaded, not installed). Both stay in the cache:
${RINGMASTER_TOOLS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/ringmaster-tools}.

Environment:
  RESET_CMD          shell command run before each file
  GABBI_PROFILE      only the files whose fixture needs this server profile: default,
                     secure-rbac, open-policy, cors
  GABBI_SKIP_FILE    the skip list (default: tests/placement-gabbits.skip; empty: none), one
                     entry a line: `FILE` (the whole file) or `FILE: TEST NAME`; `#` comments
  GABBI_SKIP         more entries, separated by `;`
  GABBI_HREF_PREFIX  put in front of the `links[].href` values the files expect (default: the
                     path of URL — a server under a prefix puts it in its links)
  GABBI_LOG_DIR      where each file's log goes (default: a new temporary folder)
  GABBI_VERBOSE      set: gabbi-run -v all
"""

import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parent.parent
PLACEMENT = "16.0.0"
GABBI = "4.2.3"
CACHE = Path(os.environ.get("RINGMASTER_TOOLS_CACHE")
             or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ringmaster-tools")
WHEEL_FILES = "placement/tests/functional/gabbits/"

# The server profile each fixture configures (the rest need the default one).
PROFILES = {"SecureRBACPolicyFixture": "secure-rbac", "OpenPolicyFixture": "open-policy",
            "CORSFixture": "cors"}

sys.path.insert(0, str(HERE))
import fixtures  # noqa: E402  (beside this script)


def say(text):
    print(f"[gabbits] {text}", file=sys.stderr, flush=True)


def gabbi_run():
    """The gabbi-run of the cache's venv, made on first use."""
    venv = CACHE / f"gabbi-{GABBI}-venv"
    runner = venv / "bin" / "gabbi-run"
    if (venv / ".complete").exists() and runner.exists():
        return runner
    say(f"making {venv} with gabbi {GABBI}")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-c", str(HERE / "constraints.txt"),
                    f"gabbi=={GABBI}"], check=True)
    (venv / ".complete").touch()
    return runner


def gabbit_folder(runner):
    """The wheel's gabbit files, downloaded (not installed) on first use."""
    folder = CACHE / f"openstack-placement-{PLACEMENT}" / "gabbit-files"
    if (folder / ".complete").exists():
        return folder
    wheels = CACHE / f"openstack-placement-{PLACEMENT}" / "wheel"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob(f"openstack_placement-{PLACEMENT}-*.whl"))
    if not found:
        say(f"downloading the openstack-placement {PLACEMENT} wheel")
        pip = runner.parent / "pip"
        subprocess.run([str(pip), "download", "-q", "--no-deps", "--only-binary", ":all:",
                        "-d", str(wheels), f"openstack-placement=={PLACEMENT}"], check=True)
        found = sorted(wheels.glob(f"openstack_placement-{PLACEMENT}-*.whl"))
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(found[0]) as wheel:
        for name in wheel.namelist():
            rest = name[len(WHEEL_FILES):]
            if name.startswith(WHEEL_FILES) and rest.endswith(".yaml") and "/" not in rest:
                (folder / rest).write_bytes(wheel.read(name))
    (folder / ".complete").touch()
    return folder


def skip_entries():
    """{file name: None for the whole file, or the set of test names}."""
    default = REPOSITORY / "tests" / "placement-gabbits.skip"
    path = os.environ.get("GABBI_SKIP_FILE", str(default))
    lines = Path(path).read_text().splitlines() if path else []
    lines += os.environ.get("GABBI_SKIP", "").split(";")
    entries = {}
    for line in lines:
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        name, _, test = line.partition(":")
        name = name.strip().removesuffix(".yaml")
        if not test.strip():
            entries[name] = None
        elif entries.get(name, set()) is not None:
            entries.setdefault(name, set()).add(test.strip())
    return entries


def test_items(lines):
    """(first line, end line, name) of each item of the file's top-level `tests:` list."""
    start = next((i + 1 for i, line in enumerate(lines) if re.match(r"^tests:\s*(#.*)?$", line)), None)
    if start is None:
        return []
    end = next((i for i in range(start, len(lines))
                if lines[i] and not lines[i][0].isspace() and not lines[i].startswith("-")
                and not lines[i].startswith("#")), len(lines))
    indent, starts = None, []
    for i in range(start, end):
        item = re.match(r"^(\s*)- ", lines[i])
        if item and indent is None:
            indent = item.group(1)
        if item and item.group(1) == indent:
            starts.append(i)
    items = []
    for k, first in enumerate(starts):
        last = starts[k + 1] if k + 1 < len(starts) else end
        name = None
        own = re.compile(rf"^{re.escape(indent)}(?:- +|  )name:\s*(.*?)\s*$")
        for line in lines[first:last]:
            found = own.match(line)
            if found:
                name = found.group(1).strip("'\"")
                break
        items.append((first, last, name))
    return items


def prepare(path, skipped, href_prefix, out):
    """The file to run (a copy without the skipped tests, with `href_prefix` in front of the
    expected links), the number of tests, and how many the skip list took out."""
    lines = path.read_text().split("\n")
    items = test_items(lines)
    drop = set()
    for first, last, name in items:
        if skipped and name in skipped:
            drop.update(range(first, last))
    missing = (skipped or set()) - {name for _, _, name in items}
    for name in sorted(missing):
        say(f"skip list: no test {name!r} in {path.stem}")
    href = re.compile(r"^(\s*[^\s#].*?\.href:\s*)/")
    if not drop and not (href_prefix and any(href.match(line) for line in lines)):
        return path, len(items), 0
    kept = [href.sub(lambda m: m.group(1) + href_prefix + "/", line) if href_prefix else line
            for index, line in enumerate(lines) if index not in drop]
    out.write_text("\n".join(kept))
    return out, len(items), len(items) - len(test_items(kept))


def run_file(url, path, runner, logs, skips, href_prefix):
    """Runs one file; returns (passed, failed, skipped)."""
    name = path.stem
    log = logs / f"{name}.log"
    fixture = fixtures.fixture_of(path)
    to_run, count, listed = prepare(path, skips.get(name), href_prefix, logs / f"{name}.yaml")
    with open(log, "w") as output:
        reset = os.environ.get("RESET_CMD")
        if reset and subprocess.run(["bash", "-c", reset], stdout=output, stderr=output).returncode:
            say(f"RESET_CMD failed before {name} (see {log})")
        try:
            variables = fixtures.make(url, fixture)
        except SystemExit as error:
            say(f"fixture {fixture} of {name} not made: {error}")
            variables = {}
        verbose = ["-v", "all"] if os.environ.get("GABBI_VERBOSE") else []
        subprocess.run([str(runner), *verbose, url, "--", str(to_run)], stdout=output,
                       stderr=subprocess.STDOUT, env={**os.environ, **variables})
    text = log.read_text(errors="replace")
    mark = lambda signs: len(re.findall(rf"^(?:\.\.\. )?(?:{signs}) gabbi-runner\.", text, re.M))
    passed, failed, skipped = mark("✓|o"), mark("✗|E|!"), mark("-")
    if not re.search(r"^Ran \d+ test", text, re.M):
        say(f"gabbi-run did not finish {name} (see {log})")
        failed = count - listed - passed - skipped
    line = f"{name}: passed {passed} failed {failed}"
    if skipped + listed:
        line += f" skipped {skipped + listed}" + (f" ({listed} by skip list)" if listed else "")
    print(line, flush=True)
    return passed, failed, skipped + listed


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    url = argv[1].rstrip("/")
    runner = gabbi_run()
    folder = gabbit_folder(runner)
    names = argv[2:] or sorted(path.stem for path in folder.glob("*.yaml"))
    logs = Path(os.environ.get("GABBI_LOG_DIR") or tempfile.mkdtemp(prefix="gabbits."))
    logs.mkdir(parents=True, exist_ok=True)
    skips = skip_entries()
    href_prefix = os.environ.get("GABBI_HREF_PREFIX", urllib.parse.urlsplit(url).path.rstrip("/"))
    profile = os.environ.get("GABBI_PROFILE")
    totals, files, missing = [0, 0, 0], 0, False
    for name in names:
        path = Path(name) if Path(name).is_file() else folder / f"{name.removesuffix('.yaml')}.yaml"
        if not path.is_file():
            print(f"{name}: missing", file=sys.stderr)
            missing = True
            continue
        if profile and PROFILES.get(fixtures.fixture_of(path), "default") != profile:
            continue
        if skips.get(path.stem, set()) is None:
            count = len(test_items(path.read_text().split("\n")))
            print(f"{path.stem}: skipped (skip list, {count} tests)")
            totals[2] += count
            continue
        files += 1
        for index, value in enumerate(run_file(url, path, runner, logs, skips, href_prefix)):
            totals[index] += value
    say(f"{files} files run; logs in {logs}")
    passed, failed, skipped = totals
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

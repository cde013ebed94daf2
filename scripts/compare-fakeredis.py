#!/usr/bin/env python3
"""Side by side with fakeredis: other projects' own tests against redis-server (the
reference), `nxlock serve` and fakeredis. Prints the table of docs/TESTING.md
("Side by side with fakeredis") and, per server, the tests that pass on redis-server and
fail on it.

    python3 -m venv /tmp/cmp && /tmp/cmp/bin/pip install "redis==8.1.0" \\
        "fakeredis[lua]==2.41.0" valkey pytest pytest-asyncio pytest-mock hypothesis packaging
    cargo build --release
    /tmp/cmp/bin/python scripts/compare-fakeredis.py [--nxlock target/release/nxlock]

The suites are the installed versions' own, from their source distributions:
- redis-py's `tests/test_lock.py` and `tests/test_scripting.py`, against each server by
  `--redis-url` (fakeredis in its TCP mode, `TcpFakeServer`);
- a slice of fakeredis's own `test/test_mixins`: its "real" variants against a server on
  port 6390 (redis-server, then nxlock serve), and its "fake" variants (fakeredis in
  process, told the real server's version, as its suite does).

Every run is RESP2 and RESP3 where the suite parametrises both; nxlock serve answers as
redis-server's version (`--redis-version`). redis-server must be on PATH, and port 6390
free.
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

FAKEREDIS_SLICE = [
    "test/test_mixins/test_string_commands.py",
    "test/test_mixins/test_generic_commands.py",
    "test/test_mixins/test_scripting_commands.py",
    "test/test_mixins/test_transactions_commands.py",
    "test/test_mixins/test_hash_commands.py",
    "test/test_mixins/test_list_commands.py",
    "test/test_mixins/test_set_commands.py",
    "test/test_mixins/test_sortedset_commands.py",
    "test/test_mixins/test_pubsub_commands.py",
    "test/test_mixins/test_server_commands.py",
]
REDIS_PY_SLICE = ["tests/test_lock.py", "tests/test_scripting.py"]
FAKEREDIS_PORT = 6390


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"*1\r\n$4\r\nPING\r\n")
                if s.recv(64).startswith(b"+PONG"):
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing answered PING on port {port}")


class Process:
    """A server process on a port, stopped on exit."""

    def __init__(self, args, port, cwd=None):
        self.process = subprocess.Popen(
            args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.port = port
        wait_for(port)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.process.kill()
        self.process.wait()


def redis_server(port, work):
    data = tempfile.mkdtemp(dir=work)
    return Process(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", data],
        port,
    )


def nxlock_serve(binary, port, version):
    # Answering as the reference's version: a suite reads INFO and runs what it offers.
    return Process([binary, "serve", "--port", str(port), "--redis-version", version], port)


def fakeredis_tcp(port):
    code = (
        "import sys; from fakeredis import TcpFakeServer; "
        "TcpFakeServer(('127.0.0.1', int(sys.argv[1])), server_type='redis').serve_forever()"
    )
    return Process([sys.executable, "-c", code, str(port)], port)


def sources(package, work):
    """The source distribution of the installed `package`, unpacked; its directory."""
    version = subprocess.run(
        [sys.executable, "-c", f"import importlib.metadata as m; print(m.version('{package}'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    target = Path(work) / f"{package}-{version}"
    if target.exists():
        return target, version
    download = tempfile.mkdtemp(dir=work)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", f"{package}=={version}",
         "--no-binary", ":all:", "--no-deps", "-d", download],
        check=True,
    )
    archive = next(Path(download).glob("*.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(work)
    extracted = next(p for p in Path(work).iterdir() if p.name.lower().startswith(package) and p.is_dir()
                     and p.name.endswith(version))
    return extracted, version


SESSION_FAILED = "(the session)"


def pytest(cwd, args, junit):
    """The outcome of every test; a session that never ran its tests (its conftest
    failed) is one failed entry, SESSION_FAILED, with pytest's last error line."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"--junitxml={junit}", *args],
        cwd=cwd, capture_output=True, text=True,
    )
    if Path(junit).exists():
        return outcomes(junit)
    errors = [line for line in (done.stdout + done.stderr).splitlines() if "Error" in line]
    return {SESSION_FAILED: ("failed", (errors or ["pytest wrote no report"])[-1].strip())}


def outcomes(junit):
    """{test id: ("passed" | "failed" | "skipped", message)} from a JUnit file."""
    found = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        verdict, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                verdict, message = "failed", child.get("message") or ""
            elif child.tag == "skipped":
                verdict, message = "skipped", child.get("message") or ""
        found[name] = (verdict, message)
    return found


def variant(name):
    """A fakeredis test id with its client variant made neutral: `[Strict2]` and
    `[FakeStrict2]` are the same test on two servers."""
    return re.sub(r"(Fake)?Strict([23])", r"resp\2", name).replace("fake_resp", "resp").replace("real_resp", "resp")


def compare(title, reference, others):
    """One table row: the tests that ran on the reference (not skipped there), and how
    many of them pass on each server; then the differences."""
    ran = {t for t, (v, _) in reference.items() if v != "skipped"}
    passed_ref = {t for t in ran if reference[t][0] == "passed"}
    row = [title, str(len(ran)), str(len(passed_ref))]
    differences = {}
    for name, results in others:
        passed = {t for t in passed_ref if results.get(t, ("missing", ""))[0] == "passed"}
        row.append(str(len(passed)))
        # A session that never started fails every test for one reason.
        absent = results.get(SESSION_FAILED, ("missing", "not run"))
        differences[name] = sorted((t, results.get(t, absent)) for t in passed_ref - passed)
    return row, differences


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nxlock", default="target/release/nxlock")
    parser.add_argument("--work", default=None, help="where the sources are unpacked")
    args = parser.parse_args()
    binary = str(Path(args.nxlock).resolve())
    if not shutil.which("redis-server"):
        sys.exit("redis-server is not on PATH")
    work = args.work or tempfile.mkdtemp(prefix="nxlock-vs-fakeredis-")
    os.makedirs(work, exist_ok=True)
    redis_py, redis_version = sources("redis", work)
    fake, fake_version = sources("fakeredis", work)
    server_version = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout
    server_version = re.search(r"v=(\S+)", server_version).group(1)
    as_version = ".".join(server_version.split(".")[:2])
    if as_version not in ("7.0", "7.2", "7.4"):
        sys.exit(f"nxlock serve answers as Redis 7.0, 7.2 or 7.4, not as {server_version}")
    results = {}

    for label, start in [
        ("redis-server", lambda p: redis_server(p, work)),
        ("nxlock serve", lambda p: nxlock_serve(binary, p, as_version)),
        ("fakeredis", fakeredis_tcp),
    ]:
        port = free_port()
        with start(port):
            results[("redis-py", label)] = pytest(
                redis_py, [*REDIS_PY_SLICE, f"--redis-url=redis://127.0.0.1:{port}"],
                Path(work) / f"redis-py-{label.replace(' ', '-')}.xml",
            )
    # fakeredis's suite: its real variants against whatever listens on 6390, its fake
    # variants in process (they read the real server's version first).
    for label, start, marker in [
        ("redis-server", lambda: redis_server(FAKEREDIS_PORT, work), "real"),
        ("nxlock serve", lambda: nxlock_serve(binary, FAKEREDIS_PORT, as_version), "real"),
        ("fakeredis", lambda: redis_server(FAKEREDIS_PORT, work), "fake"),
    ]:
        with start():
            found = pytest(
                fake, [*FAKEREDIS_SLICE, "-m", marker],
                Path(work) / f"fakeredis-{label.replace(' ', '-')}.xml",
            )
        results[("fakeredis", label)] = {variant(t): v for t, v in found.items()}

    print(f"redis-server {server_version}, redis-py {redis_version}, fakeredis {fake_version}\n")
    print("| suite | tests run on redis-server | pass on redis-server | pass on nxlock serve | pass on fakeredis |")
    print("|---|---|---|---|---|")
    all_differences = []
    for suite, title in [
        ("redis-py", f"redis-py {redis_version}: {', '.join(Path(s).name for s in REDIS_PY_SLICE)}"),
        ("fakeredis", f"fakeredis {fake_version}: {len(FAKEREDIS_SLICE)} files of test/test_mixins"),
    ]:
        row, differences = compare(
            title, results[(suite, "redis-server")],
            [(label, results[(suite, label)]) for label in ("nxlock serve", "fakeredis")],
        )
        print("| " + " | ".join(row) + " |")
        all_differences.append((suite, differences))
    for suite, differences in all_differences:
        for label, failed in differences.items():
            print(f"\n{suite}: pass on redis-server, not on {label}: {len(failed)}")
            reasons = Counter(
                (message.splitlines() or [verdict])[0][:110] for _, (verdict, message) in failed
            )
            for reason, count in reasons.most_common(12):
                print(f"  {count:4}  {reason}")
            for test, (verdict, message) in failed[:60]:
                print(f"    {verdict:7} {test}")


if __name__ == "__main__":
    main()

"""pytest fixtures for lock code, registered through the `pytest11` entry point (or
`pytest -p nxlock.pytest_plugin`):

- `nxlock_server`: an `nxlock serve` on a free loopback port, one per test session,
  flushed before each test. `.url` for `redis.Redis.from_url`, `.fastforward(ms)` to age
  every key at once, `.fault(client_name, kind, ms=None, count=None)` to stall, crash or
  silence one named client, `.command(*args)` for anything else.
- `nxlock_server_factory(redis_version=None, cluster=False)`: a server of its own, for a
  test that needs another Redis version or cluster mode; stopped after the test.
- `nxlock_explore(command, ...)`: runs `command` (a shell command line, once per
  client) under `nxlock explore --exec`; fails the test with the shrunk counterexample
  and the path of its timeline when the search finds a violation of the lock's own, or
  when nothing was checked; returns the report (the `--json` object) when the search is
  clean.

The fixtures run the `nxlock` binary: `NXLOCK_BIN`, else the one the wheel installed in
this environment's scripts directory, else `nxlock` on PATH.
"""

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import sysconfig
from xml.etree import ElementTree

import pytest

__all__ = ["Server", "binary"]


def binary():
    """The `nxlock` binary the fixtures run: `NXLOCK_BIN`, else the one installed with
    this package (the wheel puts it in the environment's scripts directory, which is on
    PATH only while the environment is active), else `nxlock` on PATH."""
    path = os.environ.get("NXLOCK_BIN")
    if not path:
        name = "nxlock.exe" if sys.platform == "win32" else "nxlock"
        for scripts in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
            candidate = os.path.join(scripts, name) if scripts else ""
            if candidate and os.access(candidate, os.X_OK):
                path = candidate
                break
    path = path or shutil.which("nxlock")
    if not path:
        raise pytest.UsageError(
            "nxlock: no nxlock binary; install the nxlock wheel, put nxlock on PATH "
            "(cargo install --path .) or set NXLOCK_BIN"
        )
    return path


class Server:
    """One `nxlock serve` process on a free loopback port."""

    def __init__(self, redis_version=None, cluster=False):
        args = [binary(), "serve", "--port", "0"]
        if redis_version:
            args += ["--redis-version", str(redis_version)]
        if cluster:
            args.append("--cluster")
        self._process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        line = self._process.stdout.readline()
        found = re.search(r"listening on (redis://\S+)", line)
        if not found:
            self._process.kill()
            _, stderr = self._process.communicate(timeout=10)
            raise RuntimeError(f"nxlock serve did not start: {line}{stderr}")
        #: The server's URL, `redis://127.0.0.1:PORT`.
        self.url = found.group(1)
        host_port = self.url.split("://", 1)[1].rstrip("/")
        host, port = host_port.rsplit(":", 1)
        self._address = (host, int(port))
        self._connection = None

    def command(self, *args):
        """Sends one command (RESP2) on the fixture's own connection; returns the reply
        (bytes, int, list or None); an error reply raises `RuntimeError`."""
        if self._connection is None:
            self._connection = socket.create_connection(self._address, timeout=10)
            self._reader = self._connection.makefile("rb")
        parts = [b"*%d\r\n" % len(args)]
        for arg in args:
            data = arg if isinstance(arg, bytes) else str(arg).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
        self._connection.sendall(b"".join(parts))
        return self._reply()

    def _reply(self):
        line = self._reader.readline()
        if not line:
            raise RuntimeError("nxlock serve closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RuntimeError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            data = self._reader.read(size + 2)
            return data[:-2]
        if kind == b"*":
            size = int(rest)
            return None if size < 0 else [self._reply() for _ in range(size)]
        raise RuntimeError(f"unexpected reply {line!r}")

    def fastforward(self, ms):
        """Moves the server's clock `ms` milliseconds ahead: every TTL runs down at once."""
        self.command("NXLOCK.FASTFORWARD", int(ms))

    def fault(self, client_name, kind, ms=None, count=None):
        """Faults the clients named `client_name` (redis-py's `client_name=`): `kind` is
        `"delay"` (each command waits `ms` on the server's clock first; `fastforward`
        ends the wait), `"disconnect"` (the connection closes, the command never runs)
        or `"lose-reply"` (the command runs, the reply never comes). A delay lasts until
        `clear_faults`, the others befall one command, unless `count` says how many."""
        args = ["NXLOCK.FAULT", client_name, kind.upper()]
        if kind.lower() == "delay":
            if ms is None:
                raise ValueError("a delay needs ms")
            args.append(int(ms))
        elif ms is not None:
            raise ValueError(f"a {kind} fault takes no ms")
        if count is not None:
            args += ["COUNT", int(count)]
        self.command(*args)

    def clear_faults(self, client_name=None):
        """Ends the fault of `client_name`, or every fault."""
        if client_name is None:
            self.command("NXLOCK.FAULT", "RESET")
        else:
            self.command("NXLOCK.FAULT", client_name, "CLEAR")

    def flush(self):
        """Empties every database and ends every fault."""
        self.command("FLUSHALL")
        self.command("NXLOCK.FAULT", "RESET")

    def stop(self):
        """Stops the server."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


@pytest.fixture(scope="session")
def _nxlock_session_server():
    server = Server()
    yield server
    server.stop()


@pytest.fixture
def nxlock_server(_nxlock_session_server):
    """The session's `nxlock serve`, flushed (and its faults ended) before the test."""
    _nxlock_session_server.flush()
    return _nxlock_session_server


@pytest.fixture
def nxlock_server_factory():
    """Starts servers of their own (`redis_version=`, `cluster=`), stopped after the test."""
    started = []

    def start(redis_version=None, cluster=False):
        server = Server(redis_version=redis_version, cluster=cluster)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def nxlock_explore(tmp_path):
    """`nxlock_explore(command, runs=200, clients=3, cycles=4, seed=0, long_lived=True,
    faults=None, extra=())`: the search, failing the test unless it is clean."""

    def explore(
        command,
        runs=200,
        clients=3,
        cycles=4,
        seed=0,
        long_lived=True,
        faults=None,
        extra=(),
    ):
        if not isinstance(command, str):
            command = shlex.join(command)
        saved, html = tmp_path / "counterexample.json", tmp_path / "timeline.html"
        junit = tmp_path / "explore.xml"
        args = [
            binary(),
            "explore",
            "--exec",
            command,
            "--runs",
            str(runs),
            "--clients",
            str(clients),
            "--cycles",
            str(cycles),
            "--seed",
            str(seed),
            "--json",
            "--save",
            str(saved),
            "--html",
            str(html),
            "--junit",
            str(junit),
        ]
        if long_lived:
            args.append("--long-lived")
        if faults:
            args += ["--faults", ",".join(faults)]
        args += list(extra)
        done = subprocess.run(args, capture_output=True, text=True)
        try:
            report = json.loads(done.stdout)
        except ValueError:
            pytest.fail(
                f"nxlock explore answered {done.returncode} without a report:\n"
                f"{done.stdout}{done.stderr}",
                pytrace=False,
            )
        if done.returncode == 1:
            failures = ElementTree.parse(junit).getroot().iter("failure")
            shown = "\n".join(failure.text or "" for failure in failures)
            pytest.fail(
                f"nxlock explore found a violation of the lock's own in {command!r}:\n"
                f"{shown}\ntimeline: {html}\nreplay: nxlock explore --exec "
                f"{shlex.quote(command)} --replay {saved}",
                pytrace=False,
            )
        if done.returncode != 0:
            pytest.fail(
                f"nxlock explore checked nothing (exit {done.returncode}):\n"
                f"{done.stdout}{done.stderr}",
                pytrace=False,
            )
        return report

    return explore

"""The run a process serves: who it is, where to connect, how many cycles, the TTL."""

import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Iterator, List


def monotonic() -> float:
    """The host's monotonic clock in seconds: `time.monotonic()`, which reads
    CLOCK_MONOTONIC, the clock the explorer reads a deadline against."""
    return time.monotonic()


def deadline(ms: float, start: float = None) -> float:
    """Where a validity of `ms` milliseconds ends on the monotonic clock, counted from
    `start` (default: now). Take `start` before the command that acquired the lock: a
    lock is valid for its TTL from when it was asked for, not from when the reply came."""
    if start is None:
        start = monotonic()
    return start + ms / 1000.0


def _monotonic_ms(at: float) -> str:
    """A monotonic instant as the MONOTONIC option takes it: milliseconds, 3 decimals,
    rounded down (a deadline is never stated later than it is)."""
    return "%.3f" % (math.floor(at * 1_000_000) / 1000.0)


@dataclass
class Run:
    """One run of `nxlock explore --exec`, as this client is told it."""

    #: This client's number, from 0.
    client: int = 0
    #: How many clients run.
    clients: int = 1
    #: `redis://` URL of this client's port (on Redlock, on the first node).
    url: str = "redis://127.0.0.1:6379"
    #: This client's URL of every node (Redlock's nodes, a cluster's shards).
    nodes: List[str] = field(default_factory=list)
    #: How many cycles to run.
    cycles: int = 4
    #: The TTL to use, milliseconds.
    ttl_ms: int = 200
    #: How many replicas the primary behind `url` has (for WAIT).
    replicas: int = 0

    @classmethod
    def from_env(cls, env=None, **fields) -> "Run":
        """The run described by the environment (`NXLOCK_CLIENT`, `REDIS_URL`, ...),
        with `fields` (from a long-lived run's line) taking precedence."""
        env = dict(os.environ if env is None else env)
        env.update(fields)
        url = env.get("REDIS_URL", cls.url)
        return cls(
            client=int(env.get("NXLOCK_CLIENT", 0)),
            clients=int(env.get("NXLOCK_CLIENTS", 1)),
            url=url,
            nodes=[n for n in env.get("NXLOCK_NODES", url).split(",") if n],
            cycles=int(env.get("NXLOCK_CYCLES", 4)),
            ttl_ms=int(env.get("NXLOCK_TTL_MS", 200)),
            replicas=int(env.get("NXLOCK_REPLICAS", 0)),
        )


def _parse(line: str) -> dict:
    return dict(f.split("=", 1) for f in line.split() if "=" in f)


def runs() -> Iterator[Run]:
    """Each run this process serves. Started by `nxlock explore --exec` it is one run
    (from the environment); with `--long-lived` (`NXLOCK_LONG_LIVED=1`) it is one run
    per line on stdin, and `ended` is written on stdout once the body of the loop is
    done with each. Close your connections before the next iteration."""
    if os.environ.get("NXLOCK_LONG_LIVED") != "1":
        yield Run.from_env()
        return
    for line in sys.stdin:
        if not line.strip():
            continue
        yield Run.from_env(**_parse(line))
        print("ended", flush=True)

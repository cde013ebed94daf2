"""What the examples share: who this process is, the markers that tell an exploring
nxlock serve what it does, and a cycle around an acquire by SET NX PX. Against a plain
`nxlock serve` the markers are accepted and ignored; against Redis, set
NXLOCK_MARKERS=0 and they are not sent.

Under `nxlock explore --exec ... --long-lived` the process serves run after run:
`each_run()` reads each run's addresses from stdin and says `ended` on stdout."""

import os
import sys
import time
import uuid

import redis

CLIENT = int(os.environ.get("NXLOCK_CLIENT", "0"))
CYCLES = int(os.environ.get("NXLOCK_CYCLES", "4"))
TTL_MS = int(os.environ.get("NXLOCK_TTL_MS", "200"))
URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")
NODES = os.environ.get("NXLOCK_NODES", URL).split(",")
MARKERS = os.environ.get("NXLOCK_MARKERS", "1") != "0"


def each_run():
    """Yields once per run: once, or (NXLOCK_LONG_LIVED=1) once per line on stdin,
    which gives the run's REDIS_URL and NXLOCK_NODES; `ended` on stdout after each."""
    global URL, NODES
    if os.environ.get("NXLOCK_LONG_LIVED") != "1":
        yield
        return
    for line in sys.stdin:
        fields = dict(field.split("=", 1) for field in line.split())
        URL = fields["REDIS_URL"]
        NODES = fields.get("NXLOCK_NODES", URL).split(",")
        yield
        print("ended", flush=True)


def connect():
    # No retries: a retried command after a lost reply would be a second command the
    # explorer did not see the client decide to send.
    return redis.Redis.from_url(URL, retry=None, socket_timeout=5)


def mark(r, *args):
    if MARKERS:
        r.execute_command(*args)


def acquire(r, key):
    """SET NX PX with a fresh token, tried every 5 ms: the token, and until when the lock
    is valid (time.monotonic()), counted from before the SET that took it."""
    token = uuid.uuid4().hex
    while True:
        started = time.monotonic()
        if r.set(key, token, nx=True, px=TTL_MS):
            return token, started + TTL_MS / 1000
        time.sleep(0.005)


def critical_section(r, key, token, valid_until):
    """Says the key holds the token, enters the resource for the validity left, works a
    tenth of the TTL, and leaves. The validity left is reckoned after HOLDS, whose
    connection (and its handshake's commands) may have waited."""
    mark(r, "NXLOCK.HOLDS", key, token)
    valid_ms = int((valid_until - time.monotonic()) * 1000)
    mark(r, "NXLOCK.ENTER", "resource", "PX", max(valid_ms, 0))
    time.sleep(TTL_MS / 10 / 1000)
    mark(r, "NXLOCK.EXIT", "resource")


def outside_work():
    """Work outside the lock, a tenth of the TTL: without it the releasing client wins
    its next acquire at once, and the others starve until it is done."""
    time.sleep(TTL_MS / 10 / 1000)


def run_cycles(key, release, acquire=acquire, connect=connect):
    """For each run, CYCLES cycles of `acquire(r, key)`, critical section,
    `release(r, key, token)` and work outside the lock; a connection error ends the
    cycle, and the next one connects again (with `connect()`)."""
    for _ in each_run():
        r = connect()
        for _ in range(CYCLES):
            try:
                token, valid_until = acquire(r, key)
                critical_section(r, key, token, valid_until)
                release(r, key, token)
                outside_work()
            except redis.ConnectionError:
                r.close()
                r = connect()
        r.close()

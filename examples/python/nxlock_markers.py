"""What the examples share: who this process is, the markers that tell an exploring
nxlock serve what it does, and a cycle around an acquire by SET NX PX. Against a plain
`nxlock serve` the markers are accepted and ignored; against Redis, set
NXLOCK_MARKERS=0 and they are not sent."""

import os
import time
import uuid

import redis

CLIENT = int(os.environ.get("NXLOCK_CLIENT", "0"))
CYCLES = int(os.environ.get("NXLOCK_CYCLES", "4"))
TTL_MS = int(os.environ.get("NXLOCK_TTL_MS", "200"))
URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")
MARKERS = os.environ.get("NXLOCK_MARKERS", "1") != "0"


def connect():
    # No retries: a retried command after a lost reply would be a second command the
    # explorer did not see the client decide to send.
    return redis.Redis.from_url(URL, retry=None, socket_timeout=5)


def mark(r, *args):
    if MARKERS:
        r.execute_command(*args)


def acquire(r, key):
    """SET NX PX with a fresh token, tried every 5 ms: the token, and the validity left
    (ms), counted from before the SET that took the lock."""
    token = uuid.uuid4().hex
    while True:
        started = time.monotonic()
        if r.set(key, token, nx=True, px=TTL_MS):
            return token, TTL_MS - int((time.monotonic() - started) * 1000)
        time.sleep(0.005)


def critical_section(r, key, token, valid_ms):
    """Says the key holds the token, enters the resource for the validity left, works a
    tenth of the TTL, and leaves."""
    mark(r, "NXLOCK.HOLDS", key, token)
    mark(r, "NXLOCK.ENTER", "resource", "PX", max(valid_ms, 0))
    time.sleep(TTL_MS / 10 / 1000)
    mark(r, "NXLOCK.EXIT", "resource")


def run_cycles(key, release):
    """CYCLES cycles of acquire, critical section and `release(r, key, token)`; a
    connection error ends the cycle, and the next one connects again."""
    r = connect()
    for _ in range(CYCLES):
        try:
            token, valid_ms = acquire(r, key)
            critical_section(r, key, token, valid_ms)
            release(r, key, token)
        except redis.ConnectionError:
            r = connect()

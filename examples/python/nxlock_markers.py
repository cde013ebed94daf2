"""What the examples share: who this process is, and the markers that tell an exploring
nxlock serve what it does. Against a plain `nxlock serve` the markers are accepted and
ignored; against Redis, set NXLOCK_MARKERS=0 and they are not sent."""

import os

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

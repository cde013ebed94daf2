"""Two clients that force a lost ownership whatever the timing: client 1 holds the lock
and stays inside its section until client 0, which releases without checking a token,
has deleted the key. The explorer must name client 0's DEL."""

import os
import time

import redis

client = int(os.environ["NXLOCK_CLIENT"])
r = redis.Redis.from_url(os.environ["REDIS_URL"], retry=None)


def mark(*args):
    r.execute_command(*args)


def wait_for(key):
    while not r.exists(key):
        time.sleep(0.005)


if client == 1:
    r.set("lock", "t1", px=10000)
    mark("NXLOCK.HOLDS", "lock", "t1")
    mark("NXLOCK.ENTER", "resource", "PX", 10000)
    r.set("entered", "1", px=10000)
    wait_for("released")
    mark("NXLOCK.EXIT", "resource")
else:
    wait_for("entered")
    r.delete("lock")
    r.set("released", "1", px=10000)

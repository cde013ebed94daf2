"""Two clients that force a lost ownership whatever the timing: client 1 holds the lock
and stays inside its section until client 0, which releases without checking a token,
has deleted the key. The explorer must name client 0's DEL. With FIXED=1, client 0
deletes the key only if it holds its own token (it holds none), and nothing breaks."""

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
    mark("NXLOCK.ENTER", "outside")
    mark("NXLOCK.EXIT", "outside")
    wait_for("entered")
    if os.environ.get("FIXED") == "1":
        r.eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0", 1, "lock", "t0")
    else:
        r.delete("lock")
    r.set("released", "1", px=10000)

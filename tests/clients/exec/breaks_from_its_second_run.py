"""Two long-lived clients (`--long-lived`) that force a lost ownership from the second
run each process serves, whatever the timing, and leave the first clean (each enters a
resource of its own): a search that finds it at its first run, after the fault-free
one, shows that the processes served more than one run."""

import os
import sys
import time

import redis

client = int(os.environ["NXLOCK_CLIENT"])


def forced_lost_ownership(r):
    """Client 1 holds the lock and stays inside until client 0, which releases without
    checking a token, has deleted the key."""

    def wait_for(key):
        while not r.exists(key):
            time.sleep(0.005)

    if client == 1:
        r.set("lock", "t1", px=10000)
        r.execute_command("NXLOCK.HOLDS", "lock", "t1")
        r.execute_command("NXLOCK.ENTER", "resource", "PX", 10000)
        r.set("entered", "1", px=10000)
        wait_for("released")
        r.execute_command("NXLOCK.EXIT", "resource")
    else:
        wait_for("entered")
        r.delete("lock")
        r.set("released", "1", px=10000)


served = 0
for line in sys.stdin:
    url = dict(field.split("=", 1) for field in line.split())["REDIS_URL"]
    r = redis.Redis.from_url(url, retry=None)
    served += 1
    if served >= 2:
        forced_lost_ownership(r)
    else:
        r.execute_command("NXLOCK.ENTER", f"resource-{client}")
        r.execute_command("NXLOCK.EXIT", f"resource-{client}")
    r.close()
    print("ended", flush=True)

"""A token lock for a replicated primary: after its SET NX PX it WAITs until every
replica has the key (NXLOCK_REPLICAS of them), and gives the lock back if they do not
within half the TTL, since a failover would lose it. Where token_lock.py loses its lock
to a failover, `nxlock explore --exec "python3 examples/python/wait_lock.py"
--topology replicated --faults failover` finds nothing of its own."""

import os
import time
import uuid

from nxlock_markers import TTL_MS, run_cycles
from token_lock import release

REPLICAS = int(os.environ.get("NXLOCK_REPLICAS", "0"))


def acquire(r, key):
    """SET NX PX with a fresh token, kept only once every replica has it: the token, and
    until when the lock is valid, counted from before the SET."""
    token = uuid.uuid4().hex
    while True:
        started = time.monotonic()
        if r.set(key, token, nx=True, px=TTL_MS):
            if r.execute_command("WAIT", REPLICAS, TTL_MS // 2) >= REPLICAS:
                return token, started + TTL_MS / 1000
            release(r, key, token)
        time.sleep(0.005)


if __name__ == "__main__":
    run_cycles("lock:resource", release, acquire)

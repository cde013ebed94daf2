"""A token lock for a replicated primary: after its SET NX PX it WAITs until every
replica has the key (NXLOCK_REPLICAS of them), and gives the lock back if they do not
within half the TTL, since a failover would lose it. Where token_lock.py loses its lock
to a failover, `nxlock explore --exec "python3 examples/python/wait_lock.py"
--topology replicated --faults failover` finds nothing of its own."""

import time
import uuid

import nxlock
from cycle import cycles, hold, release


def acquire(r, run):
    """SET NX PX with a fresh token, kept only once every replica has it: the token, and
    the deadline, counted from before the SET."""
    token = uuid.uuid4().hex
    while True:
        started = nxlock.monotonic()
        if r.set("lock:resource", token, nx=True, px=run.ttl_ms):
            if r.execute_command("WAIT", run.replicas, run.ttl_ms // 2) >= run.replicas:
                return token, nxlock.deadline(run.ttl_ms, started)
            release(r, token)
        time.sleep(0.005)


def cycle(r, marks, run):
    token, deadline = acquire(r, run)
    hold(marks, run, token, deadline)
    release(r, token)


if __name__ == "__main__":
    cycles(cycle)

"""The old two-command acquire: SETNX, then PEXPIRE. A client that loses the reply to
its SETNX (or whose PEXPIRE never arrives) leaves a key without a TTL, which nobody ever
takes again (the old SETNX page's warning)."""

import time
import uuid

import nxlock
from cycle import KEY, cycles, hold, release


def acquire(r, run):
    token = uuid.uuid4().hex
    while True:
        started = nxlock.monotonic()
        if r.setnx(KEY, token):
            r.pexpire(KEY, run.ttl_ms)  # the bug: the TTL in a second command
            return token, nxlock.deadline(run.ttl_ms, started)
        time.sleep(0.005)


def cycle(r, marks, run):
    token, deadline = acquire(r, run)
    hold(marks, run, token, deadline)
    release(r, token)


if __name__ == "__main__":
    cycles(cycle)

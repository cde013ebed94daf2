"""A correct fenced lock: SET NX PX and the fence's INCR in one script (its keys share a
hash tag), writes to a resource that refuses stale fences, and a fence counter kept
without a TTL by design, which it declares. `nxlock explore --exec
"python3 examples/python/fenced_lock.py"` finds nothing of its own."""

import time
import uuid

import nxlock
from cycle import cycles, hold_fenced, release

KEY = "{orders:42}:lock"
FENCE = "{orders:42}:fence"
ACQUIRE = """
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return redis.call('incr', KEYS[2])
end
return false
"""


def acquire(r, run):
    token = uuid.uuid4().hex
    while True:
        started = nxlock.monotonic()
        fence = r.eval(ACQUIRE, 2, KEY, FENCE, token, run.ttl_ms)
        if fence is not None:
            return token, fence, nxlock.deadline(run.ttl_ms, started)
        time.sleep(0.005)


def cycle(r, marks, run):
    marks.permanent(FENCE)
    token, fence, deadline = acquire(r, run)
    hold_fenced(marks, run, token, fence, deadline, KEY)
    release(r, token, KEY)


if __name__ == "__main__":
    cycles(cycle)

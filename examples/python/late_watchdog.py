"""A lock whose section outlasts its TTL, kept alive by a checked extend (a
compare-and-PEXPIRE script) at 0.8 of the TTL whose answer it never reads: an extend
that comes late finds the lock taken, fails, and the holder carries on as if it had
worked."""

import time

import nxlock
from cycle import KEY, acquire, cycles, release

EXTEND = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""


def cycle(r, marks, run):
    token, deadline = acquire(r, run)
    with marks.section("resource", deadline, holds=(KEY, token)) as section:
        time.sleep(run.ttl_ms * 0.8 / 1000)
        started = nxlock.monotonic()
        r.eval(EXTEND, 1, KEY, token, run.ttl_ms)  # the bug: 0 means it was lost
        section.extend(nxlock.deadline(run.ttl_ms, started))
        time.sleep(run.ttl_ms * 0.3 / 1000)
    release(r, token)


if __name__ == "__main__":
    cycles(cycle)

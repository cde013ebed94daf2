"""A lock that extends itself halfway through its section with a plain PEXPIRE: a holder
whose lock expired meanwhile extends the next holder's key, and believes it is its own
for another TTL."""

import nxlock
from cycle import KEY, acquire, cycles, release, work


def cycle(r, marks, run):
    token, deadline = acquire(r, run)
    with marks.section("resource", deadline, holds=(KEY, token)) as section:
        work(run)
        started = nxlock.monotonic()
        r.pexpire(KEY, run.ttl_ms)  # the bug: no check that the key is still ours
        section.extend(nxlock.deadline(run.ttl_ms, started))
        work(run)
    release(r, token)


if __name__ == "__main__":
    cycles(cycle)

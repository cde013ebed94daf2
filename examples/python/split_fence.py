"""A fenced lock whose fence is an INCR of its own after the SET NX PX: a holder paused
between the two takes its fence after the next holder took one, and the resource then
refuses the writes of the client that holds the lock. `nxlock explore` reports the
fence order."""

from cycle import acquire, cycles, hold_fenced, release

KEY = "{orders:42}:lock"
FENCE = "{orders:42}:fence"


def cycle(r, marks, run):
    marks.permanent(FENCE)  # the counter has no TTL by design
    token, deadline = acquire(r, run, KEY)
    fence = r.incr(FENCE)  # the bug: the fence is taken apart from the lock
    hold_fenced(marks, run, token, fence, deadline, KEY)
    release(r, token, KEY)


if __name__ == "__main__":
    cycles(cycle)

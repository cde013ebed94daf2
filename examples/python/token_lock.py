"""A correct token lock: SET NX PX with a random token, validity counted from before the
SET, and a release that deletes the key only if it still holds the token, in one
script. `nxlock explore --exec "python3 examples/python/token_lock.py"` finds nothing
of its own."""

from cycle import acquire, cycles, hold, release


def cycle(r, marks, run):
    token, deadline = acquire(r, run)
    hold(marks, run, token, deadline)
    release(r, token)


if __name__ == "__main__":
    cycles(cycle)

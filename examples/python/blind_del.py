"""A lock released by a plain DEL: a holder whose lock expired (it was paused, its
reply was late) deletes the next holder's key."""

from cycle import KEY, acquire, cycles, hold


def cycle(r, marks, run):
    token, deadline = acquire(r, run)
    hold(marks, run, token, deadline)
    r.delete(KEY)  # the bug: whoever holds the key now loses it


if __name__ == "__main__":
    cycles(cycle)

"""A lock whose release GETs, compares, then DELs. Between the two commands the key can
expire and pass to another client, whose lock the DEL then deletes:
`nxlock explore --exec "python3 examples/python/get_then_del.py"` finds it."""

from cycle import KEY, acquire, cycles, hold


def cycle(r, marks, run):
    token, deadline = acquire(r, run)
    hold(marks, run, token, deadline)
    # The bug: check, then act, in two commands.
    if r.get(KEY) == token.encode():
        r.delete(KEY)


if __name__ == "__main__":
    cycles(cycle)

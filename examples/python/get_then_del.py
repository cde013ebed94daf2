"""A lock whose release GETs, compares, then DELs. Between the two commands the key can
expire and pass to another client, whose lock the DEL then deletes:
`nxlock explore --exec "python3 examples/python/get_then_del.py"` finds it."""

from nxlock_markers import run_cycles


def release(r, key, token):
    # The bug: check, then act, in two commands.
    if r.get(key) == token.encode():
        r.delete(key)


if __name__ == "__main__":
    run_cycles("lock:resource", release)

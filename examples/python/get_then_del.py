"""A lock whose release GETs, compares, then DELs. Between the two commands the key can
expire and pass to another client, whose lock the DEL then deletes:
`nxlock explore --exec "python3 examples/python/get_then_del.py"` finds it."""

import time
import uuid

import redis

from nxlock_markers import CYCLES, TTL_MS, connect, mark

KEY = "lock:resource"


def main():
    r = connect()
    for _ in range(CYCLES):
        try:
            token = uuid.uuid4().hex
            while True:
                started = time.monotonic()
                if r.set(KEY, token, nx=True, px=TTL_MS):
                    break
                time.sleep(0.005)
            valid_ms = TTL_MS - int((time.monotonic() - started) * 1000)
            mark(r, "NXLOCK.HOLDS", KEY, token)
            mark(r, "NXLOCK.ENTER", "resource", "PX", max(valid_ms, 0))
            time.sleep(TTL_MS / 10 / 1000)
            mark(r, "NXLOCK.EXIT", "resource")
            # The bug: check, then act, in two commands.
            if r.get(KEY) == token.encode():
                r.delete(KEY)
        except redis.ConnectionError:
            r = connect()


if __name__ == "__main__":
    main()

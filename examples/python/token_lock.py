"""A correct token lock: SET NX PX with a random token, and a release that deletes the
key only if it still holds the token, in one script. Its validity is counted from
before the SET. `nxlock explore --exec "python3 examples/python/token_lock.py"` finds
nothing of its own."""

import time
import uuid

import redis

from nxlock_markers import CYCLES, TTL_MS, connect, mark

KEY = "lock:resource"
RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""


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
            r.eval(RELEASE, 1, KEY, token)
        except redis.ConnectionError:
            r = connect()


if __name__ == "__main__":
    main()

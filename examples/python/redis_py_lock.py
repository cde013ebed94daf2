"""redis-py's own `Lock`: SET NX PX with a random token, and a release that deletes the
key only if it still holds the token (a Lua script). Validity is counted from before
the acquire, as redis-py does not report it.
`nxlock explore --exec "python3 examples/python/redis_py_lock.py"`."""

import time

import redis
from redis.exceptions import LockError

from nxlock_markers import CYCLES, TTL_MS, connect, critical_section, each_run, outside_work

NAME = "lock:resource"


def main():
    for _ in each_run():
        r = connect()
        for _ in range(CYCLES):
            try:
                lock = r.lock(NAME, timeout=TTL_MS / 1000, sleep=0.005, blocking_timeout=TTL_MS * 8 / 1000)
                started = time.monotonic()
                if not lock.acquire():
                    continue
                critical_section(r, NAME, lock.local.token, started + TTL_MS / 1000)
                lock.release()
                outside_work()
            except (redis.ConnectionError, LockError):
                r.close()
                r = connect()
        r.close()


if __name__ == "__main__":
    main()

"""redis-py's own `Lock`: SET NX PX with a random token, and a release that deletes the
key only if it still holds the token (a Lua script). redis-py does not say how long the
lock is valid, so the validity is counted from before the acquire.
`nxlock explore --exec "python3 examples/python/redis_py_lock.py"` finds nothing of its
own."""

import redis
from redis.exceptions import LockError

import nxlock
from cycle import connect, work


def main():
    for run in nxlock.runs():
        r = connect(run.url)
        marks = nxlock.Markers(r)
        for _ in range(run.cycles):
            try:
                lock = r.lock(
                    "lock:resource",
                    timeout=run.ttl_ms / 1000,
                    sleep=0.005,
                    blocking_timeout=run.ttl_ms * 8 / 1000,
                )
                started = nxlock.monotonic()
                if not lock.acquire():
                    continue
                deadline = nxlock.deadline(run.ttl_ms, started)
                with marks.section("resource", deadline, holds=("lock:resource", lock.local.token)):
                    work(run)
                lock.release()
                work(run)
            except (redis.ConnectionError, LockError):
                r.close()
                r = connect(run.url)
                marks = nxlock.Markers(r)
        r.close()


if __name__ == "__main__":
    main()

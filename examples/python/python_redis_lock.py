"""python-redis-lock (`pip install python-redis-lock`) with auto-renewal: a thread
extends the lock every two thirds of its expiry while the holder works. It takes whole
seconds, so explore it with `--ttl-ms 1000`. The library says nothing of how long the
lock is valid (auto-renewal is meant to keep it), so the section is entered without a
validity: if a renewal comes too late, the lock is lost while the holder still believes
it holds it, and another client enters. `nxlock explore --exec
"python3 examples/python/python_redis_lock.py" --ttl-ms 1000 --long-lived`."""

import time

import redis
import redis_lock

import nxlock
from cycle import connect


def main():
    for run in nxlock.runs():
        r = connect(run.url)
        marks = nxlock.Markers(r)
        expire = max(1, run.ttl_ms // 1000)
        for _ in range(run.cycles):
            lock = redis_lock.Lock(r, "resource", expire=expire, auto_renewal=True)
            try:
                # Blocking: waits on the lock's signal list, and tries again every expiry.
                lock.acquire()
                # Its key is "lock:" + the name, holding the lock's id.
                with marks.section("resource", holds=("lock:resource", lock.id)):
                    time.sleep(expire * 1.5)  # longer than one expiry: renewals must work
                lock.release()
            except (redis.ConnectionError, redis_lock.NotAcquired, redis_lock.NotExpirable):
                r.close()
                r = connect(run.url)
                marks = nxlock.Markers(r)
            time.sleep(expire / 10)
        r.close()


if __name__ == "__main__":
    main()

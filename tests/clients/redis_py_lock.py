"""redis-py's Lock against a Redis-protocol server: argv[1] is its URL, argv[2] is
"fastforward" when the server understands NXLOCK.FASTFORWARD. Exits non-zero on failure."""

import sys
import threading

import redis
from redis.exceptions import LockError, LockNotOwnedError

url, mode = sys.argv[1], sys.argv[2]
r = redis.Redis.from_url(url)
r.flushall()

# Acquire, hold exclusively, release: the second client cannot get in meanwhile.
first = r.lock("resource", timeout=10)
assert first.acquire(blocking=False), "uncontended acquire failed"
second = r.lock("resource", timeout=10)
assert not second.acquire(blocking=False), "a held lock was acquired twice"
assert first.owned() and first.locked()
assert first.extend(5), "extend failed"
assert 14000 <= r.pttl("resource") <= 15000, r.pttl("resource")
first.release()
assert not first.locked()
assert second.acquire(blocking=False), "released lock not acquirable"
second.release()

# Releasing a lock we no longer own raises (the token no longer matches).
third = r.lock("resource", timeout=10)
assert third.acquire(blocking=False)
r.set("resource", "someone else")
try:
    third.release()
    raise AssertionError("release of a stolen lock succeeded")
except LockNotOwnedError:
    pass
r.delete("resource")

# A blocked waiter gets the lock after release (redis-py polls with sleep).
holder = r.lock("queue", timeout=10)
assert holder.acquire(blocking=False)
got = []

def wait():
    waiter = r.lock("queue", timeout=10, sleep=0.01)
    got.append(waiter.acquire(blocking=True, blocking_timeout=5))
    waiter.release()

t = threading.Thread(target=wait)
t.start()
holder.release()
t.join()
assert got == [True], got

# The TTL expires on the server's clock: fast-forward instead of sleeping.
if mode == "fastforward":
    stale = r.lock("ttl", timeout=10)
    assert stale.acquire(blocking=False)
    r.execute_command("NXLOCK.FASTFORWARD", 10001)
    fresh = r.lock("ttl", timeout=10)
    assert fresh.acquire(blocking=False), "expired lock not acquirable after fast-forward"
    try:
        stale.release()
        raise AssertionError("release after expiry succeeded")
    except LockError:
        pass
    fresh.release()

# The script cache: redis-py registers scripts and falls back from EVALSHA on NOSCRIPT.
r.script_flush()
again = r.lock("resource", timeout=10)
assert again.acquire(blocking=False)
again.release()
print("redis-py Lock: ok")

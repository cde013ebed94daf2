"""pottery (Redlock, and containers on hashes, lists and sets) against a Redis-protocol
server: argv[1] is its URL, argv[2] is "fastforward" when the server understands
NXLOCK.FASTFORWARD. Exits non-zero on failure."""

import sys
import warnings

import redis
from pottery import (
    NextID,
    RedisCounter,
    RedisDeque,
    RedisDict,
    RedisList,
    RedisSet,
    Redlock,
    ReleaseUnlockedLock,
    synchronize,
)

warnings.simplefilter("ignore")  # pottery warns about slow container operations

url, mode = sys.argv[1], sys.argv[2]
r = redis.Redis.from_url(url)
r.flushall()

# Redlock on one master: exclusive, timed, extendable, refuses to release what it lost.
first = Redlock(key="printer", masters={r}, auto_release_time=10)
second = Redlock(key="printer", masters={r}, auto_release_time=10)
assert first.acquire(blocking=False), "uncontended acquire failed"
assert not second.acquire(blocking=False), "a held lock was acquired twice"
assert 9 < first.locked() <= 10, first.locked()
first.extend()
first.release()
assert second.acquire(blocking=False), "released lock not acquirable"
second.release()
try:
    second.release()
    raise AssertionError("releasing an unlocked Redlock did not raise")
except ReleaseUnlockedLock:
    pass
if mode == "fastforward":
    assert first.acquire(blocking=False)
    r.execute_command("NXLOCK.FASTFORWARD", 11000)
    assert second.acquire(blocking=False), "an expired lock was not acquirable"
    second.release()

calls = []


@synchronize(key="synchronized", masters={r}, auto_release_time=5)
def critical(n):
    calls.append(n)
    return n * 2


assert critical(21) == 42 and calls == [21]

# A hash.
d = RedisDict(redis=r, key="dict", a=1, b="two")
d["c"] = [3]
assert d["a"] == 1 and d["b"] == "two" and d["c"] == [3]
assert len(d) == 3 and sorted(d) == ["a", "b", "c"]
del d["a"]
assert "a" not in d and d.get("a", "gone") == "gone"
d.update({"x": 9})
assert dict(d) == {"b": "two", "c": [3], "x": 9}, dict(d)

counter = RedisCounter(redis=r, key="counter")
counter.update("abracadabra")
assert counter["a"] == 5 and counter.most_common(1) == [("a", 5)], counter.most_common(2)

# Lists.
lst = RedisList([1, 4, 9], redis=r, key="list")
lst.append(16)
lst.insert(1, 2)
assert list(lst) == [1, 2, 4, 9, 16], list(lst)
assert lst[2] == 4 and lst[-1] == 16
lst[0] = 0
assert lst.pop() == 16 and list(lst) == [0, 2, 4, 9]
assert lst.index(4) == 2

dq = RedisDeque([1, 2], redis=r, key="deque", maxlen=3)
dq.appendleft(0)
dq.append(3)  # maxlen drops the left end
assert list(dq) == [1, 2, 3], list(dq)
assert dq.popleft() == 1 and dq.pop() == 3 and list(dq) == [2]

# A set.
s = RedisSet({"a", "b"}, redis=r, key="set")
s.add("c")
s.discard("a")
assert "b" in s and "a" not in s and len(s) == 2
assert s.isdisjoint({"x"}) and s.issubset({"b", "c", "d"})
assert set(s) == {"b", "c"}

# Unique ids, handed out by scripts.
ids = NextID(key="ids", masters={r})
assert [next(ids) for _ in range(3)] == [1, 2, 3]

print(f"pottery against {url}: Redlock, synchronize, RedisDict, RedisCounter, RedisList, RedisDeque, RedisSet, NextID ok")

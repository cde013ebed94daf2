"""What the examples share, built on the nxlock helpers (`pip install ./clients/python`):
a connection that never resends by itself, an acquire by SET NX PX that counts its
validity from before the SET, a critical section marked as such, and the loop over runs
and cycles. Against a plain `nxlock serve` the markers are accepted and ignored; against
Redis they turn themselves off."""

import time
import uuid

import redis

import nxlock

KEY = "lock:resource"
RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""


def connect(url):
    # No retries: a command resent after a lost reply would be a second command the
    # explorer did not see the client decide to send.
    return redis.Redis.from_url(url, retry=None, socket_timeout=5)


def acquire(r, run, key=KEY):
    """SET NX PX with a fresh token, tried every 5 ms: the token, and the lock's deadline
    (on the monotonic clock), counted from before the SET that took it."""
    token = uuid.uuid4().hex
    while True:
        started = nxlock.monotonic()
        if r.set(key, token, nx=True, px=run.ttl_ms):
            return token, nxlock.deadline(run.ttl_ms, started)
        time.sleep(0.005)


def work(run):
    """A tenth of the TTL of work: inside the lock, and outside it after each release
    (without that, the client that releases wins its next acquire at once)."""
    time.sleep(run.ttl_ms / 10 / 1000)


def hold(marks, run, token, deadline, key=KEY):
    """The critical section: the key holds the token, the resource is ours until the
    deadline, and a tenth of the TTL of work is done there."""
    with marks.section("resource", deadline, holds=(key, token)):
        work(run)


def hold_fenced(marks, run, token, fence, deadline, key):
    """A fenced critical section: entered with the fence, a write of what the work reads,
    a tenth of the TTL of work, and a write of its result (a strict resource takes one
    write per fence, and refuses the second: no violation)."""
    with marks.section("orders", deadline, fence=fence, holds=(key, token)) as section:
        section.write(fence)
        work(run)
        section.write(fence)


def release(r, token, key=KEY):
    """The correct release: delete the key only if it still holds our token, in one
    script."""
    r.eval(RELEASE, 1, key, token)


def cycles(cycle, connect=connect):
    """For each run: connect, then `run.cycles` times `cycle(r, marks, run)` and some
    work outside the lock. A connection error ends the cycle; the next connects again."""
    for run in nxlock.runs():
        r = connect(run.url)
        for _ in range(run.cycles):
            try:
                cycle(r, nxlock.Markers(r), run)
                work(run)
            except redis.ConnectionError:
                r.close()
                r = connect(run.url)
        r.close()

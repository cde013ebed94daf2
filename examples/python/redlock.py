"""Redlock over the nodes in NXLOCK_NODES (one port per node): the same random token set
with SET NX PX on every node, the lock held when a majority said OK and time is left
after the acquire and a drift allowance; released by a compare-and-delete on every node.
The holder uses the validity it was given: it works until a twentieth of the TTL before
its deadline.
`nxlock explore --exec "python3 examples/python/redlock.py" --topology redlock` finds
nothing of its own (a node restarted empty is inherent: opt in with
`--faults restart-empty`). redlock_answered.py and redlock_no_elapsed.py are this lock
with one classic bug each."""

import random
import time
import uuid

import redis

import nxlock
from cycle import KEY, RELEASE, connect, work


def work_until(deadline, run):
    """Works while the lock is valid, less a margin: what the validity is for."""
    left = deadline - run.ttl_ms / 20 / 1000 - nxlock.monotonic()
    if left > 0:
        time.sleep(left)


def node_clients(run):
    # A node that does not answer within a fifth of the TTL is given up on: it cannot
    # help a lock whose validity is the TTL.
    return [
        redis.Redis.from_url(url, retry=None, socket_timeout=run.ttl_ms / 5 / 1000)
        for url in run.nodes
    ]


def said_ok(nodes, command):
    """How many nodes answered `command(node)` with something true; a node's error counts
    as a no."""
    yes = 0
    for node in nodes:
        try:
            yes += bool(command(node))
        except redis.RedisError:
            pass
    return yes


def release(nodes, token):
    said_ok(nodes, lambda node: node.eval(RELEASE, 1, KEY, token))


def acquire(nodes, run, count=said_ok, elapsed_counts=True):
    """The token, and the lock's deadline: from before the first SET, less a drift
    allowance (from after the last, when `elapsed_counts` is off)."""
    drift_ms = run.ttl_ms // 100 + 2
    while True:
        token = uuid.uuid4().hex
        started = nxlock.monotonic()
        votes = count(nodes, lambda node: node.set(KEY, token, nx=True, px=run.ttl_ms))
        if not elapsed_counts:
            started = nxlock.monotonic()
        deadline = nxlock.deadline(run.ttl_ms - drift_ms, started)
        if votes > len(nodes) // 2 and nxlock.monotonic() < deadline:
            return token, deadline
        release(nodes, token)
        time.sleep(random.uniform(0.002, 0.008))


def main(**bug):
    for run in nxlock.runs():
        nodes = node_clients(run)
        # Markers go to the first node on a connection of their own: a node that dies
        # drops the lock's connections, never the markers'.
        marks = nxlock.Markers(connect(run.url))
        for _ in range(run.cycles):
            try:
                token, deadline = acquire(nodes, run, **bug)
                with marks.section("resource", deadline, holds=(KEY, token)):
                    work_until(deadline, run)
                release(nodes, token)
                work(run)
            except redis.ConnectionError:
                marks.client.close()
                marks = nxlock.Markers(connect(run.url))
        for client in nodes + [marks.client]:
            client.close()


if __name__ == "__main__":
    main()

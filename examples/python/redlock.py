"""Redlock over the nodes in NXLOCK_NODES (one port per node): the same random token
set with SET NX PX on every node, the lock held when a majority said OK and time is
left after the acquire and a drift allowance; released by a compare-and-delete on every
node. `nxlock explore --exec "python3 examples/python/redlock.py" --topology redlock`
finds nothing of its own (a node restarted empty is inherent: opt in with
`--faults restart-empty`)."""

import random
import time
import uuid

import redis

import nxlock_markers as nx

RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""
KEY = "lock:resource"


def node_clients():
    # A node that does not answer within a fifth of the TTL is given up on: it cannot
    # help a lock whose validity is the TTL.
    return [
        redis.Redis.from_url(url, retry=None, socket_timeout=nx.TTL_MS / 5 / 1000)
        for url in nx.NODES
    ]


def on_each(nodes, command):
    """How many nodes answered `command(node)` with something true; a node's error
    counts as a no."""
    said_yes = 0
    for node in nodes:
        try:
            said_yes += bool(command(node))
        except redis.RedisError:
            pass
    return said_yes


def release(nodes, token):
    on_each(nodes, lambda node: node.eval(RELEASE, 1, KEY, token))


def acquire(nodes):
    """The token, and until when the lock is valid (time.monotonic()), counted from
    before the first SET, less a drift allowance."""
    drift_ms = nx.TTL_MS // 100 + 2
    while True:
        token = uuid.uuid4().hex
        started = time.monotonic()
        said_ok = on_each(nodes, lambda node: node.set(KEY, token, nx=True, px=nx.TTL_MS))
        valid_until = started + (nx.TTL_MS - drift_ms) / 1000
        if said_ok > len(nodes) // 2 and time.monotonic() < valid_until:
            return token, valid_until
        release(nodes, token)
        time.sleep(random.uniform(0.002, 0.008))


def main():
    for _ in nx.each_run():
        nodes = node_clients()
        # Markers go to the first node on a connection of their own: a node that dies
        # drops the lock's connections, never the markers'. Connecting sends commands
        # too, which a fault may refuse: the cycle then ends, and the lock expires.
        markers = nx.connect()
        for _ in range(nx.CYCLES):
            try:
                token, valid_until = acquire(nodes)
                nx.critical_section(markers, KEY, token, valid_until)
                release(nodes, token)
                nx.outside_work()
            except redis.ConnectionError:
                markers.close()
                markers = nx.connect()
        for client in nodes + [markers]:
            client.close()


if __name__ == "__main__":
    main()

"""token_lock.py on a Redis Cluster, through redis-py's RedisCluster: the lock's key lives
on one shard, found by its slot (and again after a MOVED when the slot migrates).
`nxlock explore --exec "python3 examples/python/cluster_lock.py" --topology cluster`
serves it three shards of a primary and a replica each."""

import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

import nxlock
from cycle import acquire, hold, release, work


class Cluster(redis.RedisCluster):
    """Markers name no key a cluster client can route by: they go to the default node
    (every node of an exploring serve takes them)."""

    def execute_command(self, *args, **kwargs):
        if str(args[0]).upper().startswith("NXLOCK.") and "target_nodes" not in kwargs:
            kwargs["target_nodes"] = self.get_default_node()
        return super().execute_command(*args, **kwargs)


def connect(run):
    """A cluster client on the run's nodes. It reads the slots at once, which a fault may
    refuse: a few tries, as a service would make. No retries of a command of its own; a
    MOVED is still followed."""
    nodes = [redis.cluster.ClusterNode(*url.split("//")[1].split(":")) for url in run.nodes]
    for attempt in range(5):
        try:
            return Cluster(
                startup_nodes=nodes,
                retry=Retry(NoBackoff(), 0),
                cluster_error_retry_attempts=0,
                socket_timeout=5,
            )
        except (redis.ConnectionError, redis.exceptions.RedisClusterException):
            if attempt == 4:
                raise
            time.sleep(0.01)


def main():
    for run in nxlock.runs():
        r = connect(run)
        for _ in range(run.cycles):
            try:
                token, deadline = acquire(r, run)
                hold(nxlock.Markers(r), run, token, deadline)
                release(r, token)
                work(run)
            except (redis.ConnectionError, redis.exceptions.RedisClusterException):
                r.close()
                r = connect(run)
        r.close()


if __name__ == "__main__":
    main()

"""A client that waits for a wake-up on a channel, as a lock waiting on pub/sub does: it
sends nothing while it waits. When its primary fails over, its subscription must end
with the old primary, and it subscribes again, on the new one, through the same
address. It waits 3 s in all (nothing is ever published), then exits."""

import os
import time

import redis

r = redis.Redis.from_url(os.environ["REDIS_URL"], retry=None, socket_timeout=5)
deadline = time.monotonic() + 3
pubsub = r.pubsub()
pubsub.subscribe("lock:wake")
while time.monotonic() < deadline:
    try:
        pubsub.get_message(timeout=0.05)
    except redis.ConnectionError:
        pubsub = r.pubsub()
        pubsub.subscribe("lock:wake")

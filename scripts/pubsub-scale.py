#!/usr/bin/env python3
"""How pub/sub scales with one connection's subscriptions, on any Redis-protocol server.

One redis-py connection subscribes to N channels, one SUBSCRIBE each, and reads the
confirmations; a second connection then publishes 2,000 messages across those channels
and the first reads them all. Prints both times.

Usage: scripts/pubsub-scale.py PORT N   (needs redis-py: apt-get install python3-redis)
"""
import sys
import time

import redis

PUBLISHED = 2000


def main():
    port, n = int(sys.argv[1]), int(sys.argv[2])
    subscriber = redis.Redis(port=port, protocol=3).pubsub()
    start = time.time()
    for i in range(n):
        subscriber.subscribe(f"c{i}")
    confirmed = 0
    while confirmed < n and subscriber.get_message(timeout=5) is not None:
        confirmed += 1
    subscribed_ms = (time.time() - start) * 1000
    publisher = redis.Redis(port=port)
    start = time.time()
    for i in range(PUBLISHED):
        publisher.publish(f"c{i % n}", "x")
    received = 0
    while received < PUBLISHED:
        message = subscriber.get_message(timeout=5)
        if message is None:
            break
        if message["type"] == "message":
            received += 1
    delivered_ms = (time.time() - start) * 1000
    print(
        f"port {port}: {n} subscriptions in {subscribed_ms:.0f} ms ({confirmed} confirmed); "
        f"{PUBLISHED} published and read in {delivered_ms:.0f} ms ({received} received)"
    )


if __name__ == "__main__":
    main()

"""One step of a lock shared between redis-py's Lock and nxlock's TokenLock on the plain
layout (tests/it/clients.rs drives the steps). Usage: redis_py_interop.py URL KEY STEP [TOKEN]

- refused: redis-py's Lock cannot take KEY (someone else holds it); exit 1 if it could.
- hold: redis-py's Lock takes KEY (30 s) and keeps it; prints its token.
- release TOKEN: redis-py's Lock that holds KEY with TOKEN releases it.
"""
import sys

import redis
from redis.lock import Lock

url, key, step = sys.argv[1], sys.argv[2], sys.argv[3]
client = redis.Redis.from_url(url)
lock = Lock(client, key, timeout=30)
if step == "refused":
    if lock.acquire(blocking=False):
        lock.release()
        sys.exit("redis-py's Lock took a key nxlock holds")
elif step == "hold":
    if not lock.acquire(blocking=False):
        sys.exit("redis-py's Lock could not take a free key")
    print(lock.local.token.decode())
elif step == "release":
    lock.local.token = sys.argv[4].encode()
    lock.release()
else:
    sys.exit(f"unknown step {step}")

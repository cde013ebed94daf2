"""token_lock.py with redis-py's asyncio client and the asyncio helpers
(`nxlock.aio`): the same lock, found as clean."""

import asyncio
import uuid

import redis.asyncio as redis

import nxlock.aio as nxlock
from cycle import KEY, RELEASE


async def acquire(r, run):
    token = uuid.uuid4().hex
    while True:
        started = nxlock.monotonic()
        if await r.set(KEY, token, nx=True, px=run.ttl_ms):
            return token, nxlock.deadline(run.ttl_ms, started)
        await asyncio.sleep(0.005)


async def main():
    async for run in nxlock.runs():
        r = redis.Redis.from_url(run.url, retry=None, socket_timeout=5)
        marks = nxlock.Markers(r)
        for _ in range(run.cycles):
            try:
                token, deadline = await acquire(r, run)
                async with marks.section("resource", deadline, holds=(KEY, token)):
                    await asyncio.sleep(run.ttl_ms / 10 / 1000)
                await r.eval(RELEASE, 1, KEY, token)
                await asyncio.sleep(run.ttl_ms / 10 / 1000)
            except redis.ConnectionError:
                await r.aclose()
                r = redis.Redis.from_url(run.url, retry=None, socket_timeout=5)
                marks = nxlock.Markers(r)
        await r.aclose()


if __name__ == "__main__":
    asyncio.run(main())

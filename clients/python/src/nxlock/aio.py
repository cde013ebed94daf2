"""The helpers for asyncio clients (`redis.asyncio.Redis`): the same markers, awaited, and
the same run loop as an async iterator."""

import asyncio
import os
import sys

from ._markers import (
    _enabled_by_default,
    _is_connection_error,
    _unknown_command,
    enter_words,
    extend_words,
    stale,
)
from ._run import Run, _parse, deadline, monotonic

__all__ = ["Markers", "Run", "deadline", "monotonic", "runs"]


async def runs():
    """Each run this process serves (see `nxlock.runs`), read from stdin without
    blocking the event loop."""
    if os.environ.get("NXLOCK_LONG_LIVED") != "1":
        yield Run.from_env()
        return
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        if not line.strip():
            continue
        yield Run.from_env(**_parse(line))
        print("ended", flush=True)


class Markers:
    """The markers of one asyncio client (see `nxlock.Markers`)."""

    def __init__(self, client, enabled: bool = None):
        self.client = client
        self.enabled = _enabled_by_default() if enabled is None else enabled

    async def send(self, *args):
        if not self.enabled:
            return None
        for attempt in (1, 2):
            try:
                return await self.client.execute_command(*args)
            except Exception as error:  # noqa: BLE001
                if _unknown_command(error):
                    self.enabled = False
                    return None
                if attempt == 1 and _is_connection_error(error):
                    continue
                raise

    async def holds(self, key, token):
        await self.send("NXLOCK.HOLDS", key, token)

    async def enter(self, resource, deadline=None, px=None, fence=None):
        await self.send(*enter_words(resource, deadline, px, fence))

    async def extend(self, resource, deadline=None, px=None):
        await self.send(*extend_words(resource, deadline, px))

    async def exit(self, resource):
        await self.send("NXLOCK.EXIT", resource)

    async def write(self, resource, fence) -> bool:
        try:
            await self.send("NXLOCK.WRITE", resource, str(int(fence)))
            return True
        except Exception as error:  # noqa: BLE001
            if stale(error):
                return False
            raise

    async def permanent(self, prefix):
        await self.send("NXLOCK.PERMANENT", prefix)

    async def counter_key(self, counter, key):
        await self.send("NXLOCK.COUNTER", counter, key)

    def section(self, resource, deadline=None, px=None, fence=None, holds=None):
        """A critical section, as an async context manager."""
        return Section(self, resource, deadline, px, fence, holds)

    def increment(self, counter):
        """One increment, as an async context manager."""
        return Increment(self, counter)


class Section:
    def __init__(self, markers, resource, deadline, px, fence, holds):
        self.markers = markers
        self.resource = resource
        self._enter = (deadline, px, fence)
        self._holds = holds

    async def __aenter__(self):
        if self._holds is not None:
            await self.markers.holds(*self._holds)
        deadline, px, fence = self._enter
        await self.markers.enter(self.resource, deadline=deadline, px=px, fence=fence)
        return self

    async def __aexit__(self, *exc):
        await self.markers.exit(self.resource)
        return False

    async def extend(self, deadline=None, px=None):
        await self.markers.extend(self.resource, deadline=deadline, px=px)

    async def write(self, fence) -> bool:
        return await self.markers.write(self.resource, fence)


class Increment:
    def __init__(self, markers, counter):
        self.markers = markers
        self.counter = counter
        self._settled = False

    async def __aenter__(self):
        await self.markers.send("NXLOCK.INCR", self.counter)
        return self

    async def __aexit__(self, *exc):
        return False

    async def done(self):
        if not self._settled:
            self._settled = True
            await self.markers.send("NXLOCK.DONE")

    async def failed(self):
        if not self._settled:
            self._settled = True
            await self.markers.send("NXLOCK.FAILED")

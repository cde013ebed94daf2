"""Helpers for lock code explored by `nxlock explore --exec`.

- `runs()` yields each run this process serves: one, or (under `--long-lived`) one per
  line the explorer writes on stdin, saying `ended` after each.
- `Markers(client)` sends the markers that tell the explorer what the lock does, on the
  lock's own connection so that they stay in order with its commands: `section()` (a
  critical section, with the key and token it holds, its deadline and its fence),
  `extend()`, `write()` (a fenced write), `increment()`, `permanent()`, `counter_key()`.
- `deadline(ms)` is a validity's end on the host's monotonic clock, which the explorer
  reads too: a marker that arrives late is not stale.

Against a plain `nxlock serve` the markers are accepted and ignored; against Redis they
turn themselves off at the first `unknown command` reply (or set `NXLOCK_MARKERS=0`).
`nxlock.aio` has the same for asyncio clients.
"""

from ._markers import Increment, Markers, Section
from ._run import Run, deadline, monotonic, runs

__all__ = [
    "Increment",
    "Markers",
    "Run",
    "Section",
    "deadline",
    "monotonic",
    "runs",
]

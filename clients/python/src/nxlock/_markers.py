"""The markers, for a client with a synchronous `execute_command` (redis-py's Redis)."""

import os

from ._run import _monotonic_ms


def _enabled_by_default() -> bool:
    return os.environ.get("NXLOCK_MARKERS", "1") != "0"


def _unknown_command(error: Exception) -> bool:
    return "unknown command" in str(error).lower()


def _is_connection_error(error: Exception) -> bool:
    # redis-py's ConnectionError and TimeoutError, without importing redis here.
    names = {c.__name__ for c in type(error).__mro__}
    return bool(names & {"ConnectionError", "TimeoutError", "ConnectionResetError"})


def validity(deadline=None, px=None) -> list:
    """A validity's words: `MONOTONIC ms` for a deadline on the monotonic clock, `PX ms`
    for one relative to now (a deadline is better: a marker that arrives late is not
    stale)."""
    if deadline is not None:
        return ["MONOTONIC", _monotonic_ms(deadline)]
    if px is not None:
        return ["PX", str(max(int(px), 0))]
    return []


def enter_words(resource, deadline=None, px=None, fence=None) -> list:
    """NXLOCK.ENTER's words."""
    words = ["NXLOCK.ENTER", resource] + validity(deadline, px)
    if fence is not None:
        words += ["FENCE", str(int(fence))]
    return words


def extend_words(resource, deadline=None, px=None) -> list:
    """NXLOCK.EXTEND's words."""
    words = validity(deadline, px)
    if not words:
        raise ValueError("an extend needs a deadline (or px)")
    return ["NXLOCK.EXTEND", resource] + words


def stale(error: Exception) -> bool:
    """Whether a marker's error is a fenced resource refusing a stale write."""
    return str(error).startswith("STALE")


class Markers:
    """The markers of one client, sent on `client` (the connection the lock's own
    commands use, so that they reach the server in order with them).

    A marker is never faulted by the explorer; a connection that a fault closed before
    it is opened again for it, once."""

    def __init__(self, client, enabled: bool = None):
        self.client = client
        self.enabled = _enabled_by_default() if enabled is None else enabled

    def send(self, *args):
        """Sends one marker; its reply, or None when markers are off."""
        if not self.enabled:
            return None
        for attempt in (1, 2):
            try:
                return self.client.execute_command(*args)
            except Exception as error:  # noqa: BLE001: a client's own error types
                if _unknown_command(error):
                    # A server that is not nxlock serve: no markers from here on.
                    self.enabled = False
                    return None
                if attempt == 1 and _is_connection_error(error):
                    continue
                raise

    def holds(self, key, token):
        """The lock key `key` holds this client's `token` now: the explorer checks it keeps
        holding it for as long as the client is entitled to the lock."""
        self.send("NXLOCK.HOLDS", key, token)

    def enter(self, resource, deadline=None, px=None, fence=None):
        """Enters `resource`'s critical section, the lock valid until `deadline` (on the
        monotonic clock; or for `px` ms from now), with `fence` for a fenced resource. A
        second enter before the exit re-states the section; it does not nest."""
        self.send(*enter_words(resource, deadline, px, fence))

    def extend(self, resource, deadline=None, px=None):
        """The lock on `resource` was extended: valid until `deadline` now."""
        self.send(*extend_words(resource, deadline, px))

    def exit(self, resource):
        """Leaves `resource`'s section."""
        self.send("NXLOCK.EXIT", resource)

    def write(self, resource, fence) -> bool:
        """A write to the fenced `resource` with `fence`: whether the resource took it
        (the explorer's resource refuses a stale fence)."""
        try:
            self.send("NXLOCK.WRITE", resource, str(int(fence)))
            return True
        except Exception as error:  # noqa: BLE001
            if stale(error):
                return False
            raise

    def permanent(self, prefix):
        """Keys starting with `prefix` are kept without a TTL by design (a fence counter)."""
        self.send("NXLOCK.PERMANENT", prefix)

    def counter_key(self, counter, key):
        """The counter `counter` is kept in the key `key`: the explorer reads it at the end."""
        self.send("NXLOCK.COUNTER", counter, key)

    def section(self, resource, deadline=None, px=None, fence=None, holds=None):
        """A critical section, as a context manager: HOLDS (when `holds` is a
        `(key, token)`), ENTER, and EXIT when the block ends, however it ends."""
        return Section(self, resource, deadline, px, fence, holds)

    def increment(self, counter):
        """One increment of `counter`, as a context manager: say `.done()` once it was
        applied, `.failed()` once it surely was not; saying neither leaves its outcome
        unknown (a lost reply)."""
        return Increment(self, counter)


class Section:
    """A critical section under way (see `Markers.section`)."""

    def __init__(self, markers, resource, deadline, px, fence, holds):
        self.markers = markers
        self.resource = resource
        self._enter = (deadline, px, fence)
        self._holds = holds

    def __enter__(self) -> "Section":
        if self._holds is not None:
            self.markers.holds(*self._holds)
        deadline, px, fence = self._enter
        self.markers.enter(self.resource, deadline=deadline, px=px, fence=fence)
        return self

    def __exit__(self, *exc) -> bool:
        self.markers.exit(self.resource)
        return False

    def extend(self, deadline=None, px=None):
        """The section's lock was extended: valid until `deadline` now."""
        self.markers.extend(self.resource, deadline=deadline, px=px)

    def write(self, fence) -> bool:
        """A fenced write to the section's resource."""
        return self.markers.write(self.resource, fence)


class Increment:
    """One increment under way (see `Markers.increment`)."""

    def __init__(self, markers, counter):
        self.markers = markers
        self.counter = counter
        self._settled = False

    def __enter__(self) -> "Increment":
        self.markers.send("NXLOCK.INCR", self.counter)
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def done(self):
        """It was applied, and the client knows it."""
        if not self._settled:
            self._settled = True
            self.markers.send("NXLOCK.DONE")

    def failed(self):
        """It surely was not applied (refused before it ran)."""
        if not self._settled:
            self._settled = True
            self.markers.send("NXLOCK.FAILED")

"""The Python helpers on their own: the run as the environment and a long-lived line
tell it, deadlines as MONOTONIC takes them, markers in order on the client they are
given, turned off by a server that does not know them, and a stale write told apart.
`python3 -m pytest clients/python/tests` (the Rust tests run it too)."""

import asyncio
import io
import sys

import pytest

import nxlock
import nxlock.aio
from nxlock._run import _monotonic_ms


class Recording:
    """A client that records what it is sent, and answers like nxlock serve (or like
    Redis, which knows no marker, or with a stale fence)."""

    def __init__(self, answer=None):
        self.sent = []
        self.answer = answer

    def execute_command(self, *args):
        self.sent.append(args)
        if self.answer:
            raise self.answer(args)
        return b"OK"


class ResponseError(Exception):
    pass


def test_a_run_is_read_from_the_environment_and_a_long_lived_line(monkeypatch):
    monkeypatch.setenv("NXLOCK_CLIENT", "2")
    monkeypatch.setenv("NXLOCK_CLIENTS", "3")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:7000")
    monkeypatch.setenv("NXLOCK_TTL_MS", "250")
    monkeypatch.delenv("NXLOCK_NODES", raising=False)
    run = nxlock.Run.from_env()
    assert (run.client, run.clients, run.ttl_ms) == (2, 3, 250)
    assert run.nodes == ["redis://127.0.0.1:7000"]
    monkeypatch.setenv("NXLOCK_LONG_LIVED", "1")
    monkeypatch.setattr(
        sys,
        "stdin",
        io.StringIO(
            "REDIS_URL=redis://a:1 NXLOCK_NODES=redis://a:1,redis://b:2 NXLOCK_CYCLES=7\n"
        ),
    )
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    runs = list(nxlock.runs())
    assert [(r.url, r.nodes, r.cycles) for r in runs] == [
        ("redis://a:1", ["redis://a:1", "redis://b:2"], 7)
    ]
    assert out.getvalue() == "ended\n"


def test_a_deadline_is_stated_in_monotonic_milliseconds_rounded_down():
    assert _monotonic_ms(12.3456789) == "12345.678"
    start = nxlock.monotonic()
    assert nxlock.deadline(200, start) == start + 0.2


def test_a_section_sends_holds_enter_and_exit_in_order_even_when_its_body_raises():
    client = Recording()
    marks = nxlock.Markers(client, enabled=True)
    with pytest.raises(KeyError):
        with marks.section("r", deadline=5.0, fence=3, holds=("k", "t")) as section:
            section.extend(px=100)
            raise KeyError("the body failed")
    assert client.sent == [
        ("NXLOCK.HOLDS", "k", "t"),
        ("NXLOCK.ENTER", "r", "MONOTONIC", "5000.000", "FENCE", "3"),
        ("NXLOCK.EXTEND", "r", "PX", "100"),
        ("NXLOCK.EXIT", "r"),
    ]


def test_markers_turn_themselves_off_against_a_server_that_does_not_know_them():
    client = Recording(lambda args: ResponseError(f"unknown command '{args[0]}'"))
    marks = nxlock.Markers(client, enabled=True)
    marks.enter("r")
    marks.exit("r")
    assert len(client.sent) == 1 and not marks.enabled
    off = Recording()
    nxlock.Markers(off, enabled=False).enter("r")
    assert off.sent == []


def test_a_stale_write_is_false_and_an_increment_settles_once():
    stale = Recording(lambda args: ResponseError("STALE fence 3: the resource has accepted fence 5"))
    assert nxlock.Markers(stale, enabled=True).write("r", 3) is False
    client = Recording()
    marks = nxlock.Markers(client, enabled=True)
    assert marks.write("r", 4) is True
    with marks.increment("hits") as increment:
        increment.done()
        increment.failed()
    assert client.sent[1:] == [("NXLOCK.INCR", "hits"), ("NXLOCK.DONE",)]


def test_the_asyncio_markers_say_the_same():
    class Async(Recording):
        async def execute_command(self, *args):
            return Recording.execute_command(self, *args)

    client = Async()
    marks = nxlock.aio.Markers(client, enabled=True)

    async def cycle():
        async with marks.section("r", px=50, holds=("k", "t")):
            pass
        return await marks.write("r", 1)

    assert asyncio.run(cycle()) is True
    assert [args[0] for args in client.sent] == [
        "NXLOCK.HOLDS",
        "NXLOCK.ENTER",
        "NXLOCK.EXIT",
        "NXLOCK.WRITE",
    ]

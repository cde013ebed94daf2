"""The nxlock pytest plugin on lock code: a server whose clock a test moves, and the
explorer run from a test. `pip install` the nxlock package (its pytest11 entry point
registers the fixtures), then `pytest examples/python/tests`."""

import sys
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

EXAMPLES = Path(__file__).resolve().parent.parent


def python(script):
    """The command line that runs one of the example locks with this interpreter."""
    return f"{sys.executable} {EXAMPLES / script}"


def test_a_30_second_lock_expires_at_once_when_the_server_fastforwards(nxlock_server):
    r = redis.Redis.from_url(nxlock_server.url)
    assert r.set("lock", "me", nx=True, px=30_000)
    assert not r.set("lock", "you", nx=True, px=30_000)
    nxlock_server.fastforward(29_000)  # 1 s left (and real time runs on a little)
    assert not r.set("lock", "you", nx=True, px=30_000)
    nxlock_server.fastforward(1_001)
    assert r.set("lock", "you", nx=True, px=30_000)


@pytest.mark.parametrize("test", ["first", "second"])
def test_every_test_starts_on_an_empty_server(nxlock_server, test):
    r = redis.Redis.from_url(nxlock_server.url)
    assert r.dbsize() == 0
    r.set("left-by", test)


def test_a_lock_set_whose_reply_was_lost_is_held_by_nobody_who_knows(nxlock_server):
    # The SET NX took effect, but its reply never came: the client cannot tell it holds
    # the lock, and a naive retry of SET NX is refused by its own lock until the TTL.
    # No retries (redis-py 6 and later retry a failed command by default).
    worker = redis.Redis.from_url(
        nxlock_server.url, client_name="worker", retry=Retry(NoBackoff(), 0)
    )
    worker.ping()
    nxlock_server.fault("worker", "lose-reply")
    with pytest.raises(redis.ConnectionError):
        worker.set("lock", "token-1", nx=True, px=30_000)
    assert not worker.set("lock", "token-2", nx=True, px=30_000)  # refused by itself
    assert worker.get("lock") == b"token-1"
    nxlock_server.fastforward(30_001)
    assert worker.set("lock", "token-2", nx=True, px=30_000)


def test_a_paused_holders_plain_del_frees_the_next_holders_lock(nxlock_server):
    # The classic bug of unlocking with a plain DEL: the holder stalls (a minute-long GC
    # pause) with its DEL in flight, its lock expires, another client takes the lock,
    # and the DEL, run when the pause ends, deletes the other client's lock.
    holder = redis.Redis.from_url(nxlock_server.url, client_name="holder")
    other = redis.Redis.from_url(nxlock_server.url, client_name="other")
    assert holder.set("lock", "holder", nx=True, px=10_000)
    nxlock_server.fault("holder", "delay", ms=60_000)
    try:
        unlock = holder.connection_pool.get_connection()
    except TypeError:  # redis-py before 5.3 asks for the command's name
        unlock = holder.connection_pool.get_connection("DEL")
    unlock.send_command("DEL", "lock")  # sent; held by the server for a minute
    nxlock_server.fastforward(10_001)  # the holder's lock expires meanwhile
    assert other.set("lock", "other", nx=True, px=120_000)
    nxlock_server.fastforward(50_000)  # the pause ends: the DEL runs now
    assert unlock.read_response() == 1
    holder.connection_pool.release(unlock)
    assert other.get("lock") is None  # the other client's lock is gone


def test_a_server_of_another_redis_version(nxlock_server_factory):
    server = nxlock_server_factory(redis_version="7.0")
    info = redis.Redis.from_url(server.url).info("server")
    assert info["redis_version"].startswith("7.0")


def test_the_token_lock_has_no_bug_of_its_own(nxlock_explore):
    report = nxlock_explore(python("token_lock.py"), runs=60)
    assert report["runs"] == 60
    assert not report["violations"]


def test_the_get_compare_del_lock_is_caught_with_its_counterexample(nxlock_explore):
    with pytest.raises(pytest.fail.Exception) as failed:
        # Seed 2 finds it at run 56; three replays confirm it.
        nxlock_explore(
            python("get_then_del.py"),
            runs=300,
            seed=2,
            extra=["--replays", "3", "--confirm", "2"],
        )
    message = str(failed.value)
    assert "lost-ownership" in message
    assert "timeline: " in message and "--replay" in message

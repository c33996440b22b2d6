"""Which runs have ended, at each event: the cache's flag, or with Redis the ends each process
hears on a channel, with the flag read once after each subscription (delegation/ended.py)."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from types import SimpleNamespace

import pytest
import redis
from django.conf import settings

from delegation.runs import ended
from delegation.runs.ended import CHANNEL, ENDED_KEY, EndWatch, run_mark_ended

needs_redis = pytest.mark.skipif(
    not settings.REDIS_URL,
    reason="the ends' channel needs Redis: run in the Postgres + Redis pass (bin/test-distributed)",
)


@pytest.fixture
def reads(monkeypatch) -> SimpleNamespace:
    """The flag's reads, counted."""
    counted = SimpleNamespace(reads=0)
    read = ended.flag_is_set

    def counting(run_id: str) -> bool:
        counted.reads += 1
        return read(run_id)

    monkeypatch.setattr(ended, "flag_is_set", counting)
    return counted


def flag_only(run_id) -> None:
    """The run's flag set, its message never sent (an end this process did not hear)."""
    key = ENDED_KEY.format(run_id)
    if settings.REDIS_URL:
        redis.Redis.from_url(settings.REDIS_URL).set(key, 1, ex=60)
    else:
        ended.cache.set(key, 1, 60)


def eventually(check, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def subscribed() -> ended._Feed:
    feed = ended._FEED.get()
    eventually(lambda: feed.generation is not None)
    return feed


def test_without_redis_each_event_reads_the_flag(settings, reads):
    settings.REDIS_URL = ""
    watch = EndWatch(uuid.uuid4())
    assert not watch.ended() and not watch.ended()
    run_mark_ended(watch.run_id)
    assert watch.ended()
    assert reads.reads == 3


@needs_redis
def test_an_end_heard_on_the_channel_needs_no_read_of_the_flag(reads):
    feed = subscribed()
    watch = EndWatch(uuid.uuid4())
    assert not watch.ended()  # the flag, read once for this subscription
    assert not watch.ended() and reads.reads == 1
    # Another process ends it: only its message arrives here, no flag is read.
    redis.Redis.from_url(settings.REDIS_URL).publish(CHANNEL, watch.run_id)
    eventually(lambda: feed.heard(watch.run_id))
    assert watch.ended() and reads.reads == 1


@needs_redis
def test_an_end_before_the_subscription_is_read_from_the_flag(reads):
    subscribed()
    run_id = uuid.uuid4()
    flag_only(run_id)  # set, its message not heard here
    assert EndWatch(run_id).ended() and reads.reads == 1


@needs_redis
def test_this_process_hears_its_own_ends():
    feed = subscribed()
    watch = EndWatch(uuid.uuid4())
    assert not watch.ended()
    run_mark_ended(watch.run_id)
    eventually(lambda: feed.heard(watch.run_id))
    assert watch.ended()


@needs_redis
def test_after_a_lost_subscription_the_flag_answers_and_is_read_again_once(reads):
    feed = subscribed()
    watch = EndWatch(uuid.uuid4())
    assert not watch.ended()
    first = feed.generation
    # The connection is lost; the run ends meanwhile, its message unheard.
    server = redis.Redis.from_url(settings.REDIS_URL)
    (mine,) = [c for c in server.client_list() if c["name"] == f"run-ends:{os.getpid()}"]
    server.client_kill_filter(_id=mine["id"])  # this process's only: others' stay subscribed
    eventually(lambda: feed.generation not in (None, first))
    flag_only(watch.run_id)
    before = reads.reads
    assert watch.ended()  # a new subscription: the flag is read again
    assert reads.reads == before + 1


@needs_redis
def test_while_not_subscribed_every_event_reads_the_flag(reads, monkeypatch):
    # A feed between subscriptions (Redis restarting): it has heard nothing, answers nothing.
    between = SimpleNamespace(generation=None, heard=lambda run_id: False)
    monkeypatch.setattr(ended, "_FEED", SimpleNamespace(get=lambda: between))
    watch = EndWatch(uuid.uuid4())
    assert not watch.ended() and not watch.ended()
    flag_only(watch.run_id)
    assert watch.ended() and reads.reads == 3


@needs_redis
def test_a_run_read_not_ended_after_the_subscription_needs_no_read_of_the_flag(reads):
    feed = subscribed()
    # Claimed (read not ended) after the feed subscribed: any end since is heard.
    watch = EndWatch(uuid.uuid4(), since=time.monotonic())
    assert feed.subscribed_at < watch.since
    assert not watch.ended() and not watch.ended()
    assert reads.reads == 0
    run_mark_ended(watch.run_id)
    eventually(lambda: feed.heard(watch.run_id))
    assert watch.ended() and reads.reads == 0


@needs_redis
def test_a_run_read_before_the_subscription_reads_the_flag_once(reads):
    feed = subscribed()
    run_id = uuid.uuid4()
    flag_only(run_id)  # ended unheard, before a read...
    watch = EndWatch(run_id, since=feed.subscribed_at - 1)  # ...made before the subscription
    assert watch.ended() and reads.reads == 1


class SilentableProxy:
    """A TCP proxy to Redis whose connections can go silent: bytes are taken and dropped both
    ways, the sockets stay open (a peer gone without a word, as behind a dead NAT)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.muted: set[int] = set()  # ids of the connection pairs gone silent
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(self.upstream)
            pair = len(self.pairs)
            self.pairs.append((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(pair, source, sink), daemon=True).start()

    def _pump(self, pair: int, source: socket.socket, sink: socket.socket) -> None:
        while True:
            try:
                data = source.recv(65536)
                if not data:
                    return
                if pair not in self.muted:
                    sink.sendall(data)
            except OSError:
                return

    def silence(self) -> None:
        """Every connection open now goes silent; new ones are forwarded."""
        self.muted.update(range(len(self.pairs)))

    def close(self) -> None:
        self.listener.close()
        for client, server in self.pairs:
            client.close()
            server.close()


@needs_redis
def test_a_subscription_gone_silent_is_dropped_by_its_unanswered_pings_and_made_again(
    monkeypatch, caplog
):
    monkeypatch.setattr(ended, "PING_SECONDS", 0.1)
    url = redis.connection.parse_url(settings.REDIS_URL)
    proxy = SilentableProxy((url.get("host", "127.0.0.1"), url.get("port", 6379)))
    feed = ended._Feed(f"redis://127.0.0.1:{proxy.port}/{url.get('db', 0)}")
    try:
        eventually(lambda: feed.generation == 1)
        proxy.silence()  # the connection looks open, and answers nothing
        # Found by its unanswered PINGs (TCP alone would not tell for minutes, if ever).
        eventually(lambda: feed.generation is None, timeout=5)
        assert "the subscription answers nothing" in caplog.text
        eventually(lambda: feed.generation == 2, timeout=5)  # subscribed again, heard again
        run_id = str(uuid.uuid4())
        redis.Redis.from_url(settings.REDIS_URL).publish(CHANNEL, run_id)
        eventually(lambda: feed.heard(run_id))
    finally:
        feed.close()
        proxy.close()


@needs_redis
def test_an_end_sets_its_flag_and_sends_its_message_together():
    feed = subscribed()
    run_id = str(uuid.uuid4())
    assert not ended.flag_is_set(run_id)
    run_mark_ended(run_id)  # one pipeline: the flag, then the message
    assert ended.flag_is_set(run_id)
    eventually(lambda: feed.heard(run_id))
    ttl = redis.Redis.from_url(settings.REDIS_URL).ttl(ENDED_KEY.format(run_id))
    assert 0 < ttl <= ended.KEEP_SECONDS

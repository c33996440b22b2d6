"""Which runs have ended, as any process can tell at each event it sends.

A run's end sets a flag for an hour, so that a worker still streaming the run (a stop came
from the page, the sweeper ended it, another worker took it over) falls silent. Reading that
flag at every event was a Redis round trip each (125 µs; 8 % of a distributed worker's run
thread, the largest single item after the database). With Redis, every end is also published
on a channel, in the same round trip as its flag, and each process keeps the ends it heard in
memory: a thread of its own listens (`_Feed`). An event then reads the flag only when the feed
cannot answer: while it is not subscribed, and once after a (re)subscription that came later
than the run was last read not ended (an end before it was not heard; one before that read
would have been seen there). Without Redis the flag is in the in-process cache, asked directly.

An end heard a moment late lets an event through that the flag would have stopped; so could
the flag (an event read as not ended is sent by another thread after the read). Either way it
is the delay of one message between processes. A subscription whose connection died without
a word is found by its unanswered PINGs within 3 `PING_SECONDS`; until then ends go unheard.

The flag only quiets a worker early: the database's fenced writes are what stop it. So Redis
being down or restarting is logged and never fails a run: an end not flagged then is found at
the worker's next fenced write, and a flag that cannot be read counts as not set.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

import redis
from django.conf import settings
from django.core.cache import cache

from config.db.per_process import PerProcess

logger = logging.getLogger(__name__)

ENDED_KEY = "run-ended:{}"  # the flag: in Redis with it, else in the (in-process) cache
CHANNEL = "run-ended"  # every end's run id, published after its flag is set
KEEP_SECONDS = 3600  # as long as the flag: no delivery of a run lasts longer
PING_SECONDS = (
    5.0  # a quiet subscription is asked for a PONG this often, dropped after 2 unanswered
)


def run_mark_ended(run_id: Any) -> None:
    """Remember that the run ended, for every process that may still be streaming it."""
    key = ENDED_KEY.format(run_id)
    if not settings.REDIS_URL:
        cache.set(key, 1, KEEP_SECONDS)
        return
    # The flag and its message in one round trip (a pipeline, not a transaction: Redis runs
    # them in order, so whoever hears the message finds the flag set).
    try:
        with _publisher().pipeline(transaction=False) as pipe:
            pipe.set(key, 1, ex=KEEP_SECONDS).publish(CHANNEL, str(run_id)).execute()
    except redis.RedisError as exc:
        logger.warning("could not flag run %s ended (Redis: %s); its fence stops it", run_id, exc)


def flag_is_set(run_id: str) -> bool:
    """The run's flag: in Redis with it (beside the channel), else in this process's cache;
    not set while Redis cannot answer."""
    key = ENDED_KEY.format(run_id)
    if not settings.REDIS_URL:
        return bool(cache.get(key))
    try:
        return _publisher().get(key) is not None
    except redis.RedisError as exc:  # (the feed logs the outage, once per retry)
        logger.debug("could not read run %s's end flag (Redis: %s)", run_id, exc)
        return False


class EndWatch:
    """Whether one run has ended, asked at each event its emitter sends. `since`: when the run
    was read not ended (`time.monotonic()` before its claim), if known."""

    def __init__(self, run_id: Any, *, since: float | None = None) -> None:
        self.run_id = str(run_id)
        self.since = since
        self._generation: int | None = None  # the feed's subscription this watch trusts

    def ended(self) -> bool:
        """True once the run has ended (as this process has heard, or the cache says)."""
        feed = _FEED.get() if settings.REDIS_URL else None
        generation = feed.generation if feed is not None else None
        if generation is None:  # no feed, or not subscribed: the flag
            return flag_is_set(self.run_id)
        if feed.heard(self.run_id):
            return True
        if generation != self._generation:
            # An end before this subscription was not heard: unless the run was read not ended
            # after it, the flag tells, once.
            missed = self.since is None or feed.subscribed_at > self.since
            if missed and flag_is_set(self.run_id):
                return True
            self._generation = generation
        return False


class _Feed:
    """This process's subscription to the ends, and the runs it heard end (each kept as long
    as its flag). `generation` counts confirmed subscriptions, None while not subscribed;
    `subscribed_at` is when the current one was confirmed (monotonic; it began a little
    earlier)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.generation: int | None = None
        self.subscribed_at = 0.0
        self._subscriptions = 0
        self._heard: dict[str, float] = {}
        self._pruned = time.monotonic()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="run-ends")
        self._thread.start()

    def close(self, timeout: float = 10) -> None:
        """Stop listening, at its next PING or message, and wait for that (a process's own
        feed lives as long as the process)."""
        self._closed.set()
        self._thread.join(timeout)

    def heard(self, run_id: str) -> bool:
        """Whether this process heard the run end since it subscribed."""
        return run_id in self._heard

    def _loop(self) -> None:
        while not self._closed.is_set():
            try:
                self._listen()
            except Exception:  # Redis restarting or unreachable: the flag answers meanwhile
                logger.warning("listening for run ends failed; retrying", exc_info=True)
            self.generation = None
            self._closed.wait(1)

    def _listen(self) -> None:
        client = redis.Redis.from_url(
            self.url,
            socket_keepalive=True,
            health_check_interval=30,
            socket_timeout=None,
            client_name=f"run-ends:{os.getpid()}",  # CLIENT LIST tells whose subscription it is
        )
        with client.pubsub() as pubsub:
            pubsub.subscribe(CHANNEL)
            heard_at = time.monotonic()
            while not self._closed.is_set():
                message = pubsub.get_message(timeout=PING_SECONDS)
                if message is None:
                    # A connection gone silently looks subscribed: a PING must be answered.
                    if time.monotonic() - heard_at > 2 * PING_SECONDS:
                        raise redis.ConnectionError("the subscription answers nothing")
                    pubsub.ping()
                    continue
                heard_at = time.monotonic()
                if message["type"] == "subscribe":
                    self._subscriptions += 1
                    self.subscribed_at = time.monotonic()
                    self.generation = self._subscriptions
                elif message["type"] == "message":
                    self._hear(message["data"].decode())

    def _hear(self, run_id: str) -> None:
        now = time.monotonic()
        self._heard[run_id] = now
        if now - self._pruned > 60:
            self._pruned = now
            self._heard = {k: t for k, t in self._heard.items() if now - t < KEEP_SECONDS}


_FEED = PerProcess(lambda: _Feed(settings.REDIS_URL))
# A Redis that hangs instead of refusing holds a run's event for at most a few seconds.
_PUBLISHER = PerProcess(
    lambda: redis.Redis.from_url(
        settings.REDIS_URL, socket_keepalive=True, socket_connect_timeout=2, socket_timeout=5
    )
)


def _publisher() -> redis.Redis:
    return _PUBLISHER.get()

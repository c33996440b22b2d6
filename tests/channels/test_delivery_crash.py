"""An answer reaches LINE exactly once although the worker sending it is killed mid-send (LINE
took the message, the worker never heard back): a new worker's sweep sends it again, and LINE's
single-use reply token or its retry key keeps the chat from showing it twice."""

from __future__ import annotations

import time

import pytest

from chat.channels.gateway import Inbound, inbound_accept
from chat.channels.models import ChannelLink, Delivery
from tests.channels.conftest import SECRET
from tests.channels.fake_line import FakeLine, start_fake_line
from tests.e2e.conftest import flush_redis, workers  # noqa: F401  (real Celery workers)
from tests.factories import make_agent, make_user
from tests.waiting import wait_until

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def line() -> FakeLine:
    fake, server = start_fake_line()
    yield fake
    fake.release.set()
    server.shutdown()


def worker_env(line: FakeLine) -> dict[str, str]:
    return {
        "LINE_CHANNEL_SECRET": SECRET,
        "LINE_CHANNEL_ACCESS_TOKEN": "line-token",
        "LINE_API_BASE_URL": line.url,
        "CHANNEL_STALE_SECONDS": "1",
        "SWEEP_INTERVAL_SECONDS": "1",
    }


@pytest.mark.parametrize("late", [False, True], ids=["reply", "push"])
def test_a_worker_killed_mid_send_shows_the_answer_once(workers, line, late):  # noqa: F811
    make_agent("assistant", is_entry=True, tool_keys=["calculate"])
    ChannelLink.objects.create(channel="line", external_id="U1", user=make_user("alice"))
    line.hold_next = True
    first = workers.start("w1", **worker_env(line))
    at_ms = (time.time() - (120 if late else 0)) * 1000  # a stale token: pushed instead
    inbound_accept(
        Inbound(
            channel="line",
            event_id="E-crash",
            external_id="U1",
            kind="text",
            text="what is 6*7?",
            reply={"token": "reply-token-1", "to": "U1", "at_ms": at_ms},
        )
    )
    assert line.holding.wait(60), "the answer never reached LINE"
    workers.kill(first)  # LINE has the message; the worker never hears so
    line.release.set()
    delivery = Delivery.objects.get()
    assert delivery.status == "pending" and delivery.attempts == 1
    workers.start("w2", beat=True, **worker_env(line))
    wait_until(lambda: Delivery.objects.get().status == "sent", timeout=60)
    # At least one more attempt; on a loaded machine a send slower than the stale age is
    # queued again by the next sweep, and that is safe: the chat still shows it once.
    assert Delivery.objects.get().attempts >= 2
    sent = line.texts()
    assert len(sent) == 1 and "42" in sent[0], sent
    assert (len(line.replies), len(line.pushes)) == ((0, 1) if late else (1, 0))

"""The offline model demos the human waits: its rules call ask_human and ask_user from plain
words, and it reports the person's answer."""

from __future__ import annotations

import pytest

from delegation.humans.models import InboxItem
from delegation.humans.tools import offline_ask_human, offline_ask_user
from delegation.models import RunStatus
from tests.factories import make_agent
from tests.humans.helpers import client, decide, start

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        (
            "ask a human: may I expense a taxi?",
            {"question": "may I expense a taxi?", "urgency": "normal"},
        ),
        (
            "Escalate urgently: the server is down",
            {"question": "urgently: the server is down", "urgency": "high"},
        ),
        ("转人工：我要退款", {"question": "我要退款", "urgency": "normal"}),
        (  # the routing policy's words for a person count too
            "I want to talk to a person about my payslip",
            {"question": "I want to talk to a person about my payslip", "urgency": "normal"},
        ),
        ("找真人：年假還剩幾天", {"question": "年假還剩幾天", "urgency": "normal"}),
        ("what is 2+2?", None),
        ("Where is the human resources policy?", None),
    ],
)
def test_the_offline_rule_for_ask_human(text, arguments):
    assert offline_ask_human(text) == arguments


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ("help me choose between tea, coffee or juice", ["tea", "coffee", "juice"]),
        ("Pick between the train and the plane.", ["the train", "the plane"]),
        ("茶还是咖啡？", ["茶", "咖啡"]),
        ("choose between nothing", None),
        ("what time is it?", None),
    ],
)
def test_the_offline_rule_for_ask_user(text, options):
    found = offline_ask_user(text)
    assert (found["options"] if found else None) == options


def test_an_offline_agent_asks_staff_and_reports_the_answer(user, staff, settings):
    settings.TASKS_RUN_SYNC = True
    make_agent("assistant", display_name="Assistant", is_entry=True, tool_keys=["ask_human"])
    run = start(user, "ask a human: may I expense a taxi?")
    assert run.status == RunStatus.WAITING_HUMAN
    item = InboxItem.objects.get()
    assert item.question == "may I expense a taxi?"
    assert (
        decide(client(staff), item.id, decision="approve", answer="Yes, up to 50.").status_code
        == 200
    )
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    assert run.answer == "[offline model] stella answered: Yes, up to 50."

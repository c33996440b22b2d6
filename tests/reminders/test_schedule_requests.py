"""Schedules asked for in words (the schedule_prompt tool): English and Chinese in both
scripts, the user's timezone and DST, once per request, agents the user may not use refused,
and the undo (REST delete, the owner's only)."""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime
from io import StringIO
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django_celery_beat.models import PeriodicTask

from agents.registry import ToolContext, execute, get_tool
from delegation.models import FINAL_STATUSES, Run
from delegation.routing.decide import RoutingInput, routing_decide
from delegation.routing.seeds import routing_seed
from delegation.turns import turn_start
from reminders.models import ScheduledPrompt
from reminders.schedule_rule import schedule_prompt_args
from reminders.schedule_words import read_schedule
from tests.factories import make_agent
from tests.reminders.conftest import user_in

NEW_YORK = ZoneInfo("America/New_York")


def ask(user, context: ToolContext | None = None, **args) -> dict:
    """The schedule_prompt tool as the model calls it; its result body."""
    result = execute(
        get_tool("schedule_prompt"), context or ToolContext(user=user), json.dumps(args)
    )
    assert result.ok, result
    return result.data


@pytest.fixture
def finance(db):
    return make_agent(
        "finance",
        display_name="Finance expert",
        display_names={"en": "Finance expert", "zh-hant": "財務專家", "zh-hans": "财务专家"},
    )


@pytest.mark.parametrize(
    ("words", "fields", "assumed"),
    [
        ("每週一早上", ("0", "9", "1", "*"), "09:00"),
        ("每周一早上", ("0", "9", "1", "*"), "09:00"),
        ("每天早上九點", ("0", "9", "*", "*"), None),
        ("每天早上九点", ("0", "9", "*", "*"), None),
        ("每月1號", ("0", "9", "*", "1"), "09:00"),
        ("每月1号下午", ("0", "14", "*", "1"), "14:00"),
        ("weekdays", ("0", "9", "1-5", "*"), "09:00"),
        ("weekdays at 8:30", ("30", "8", "1-5", "*"), None),
        ("every Monday at 9", ("0", "9", "1", "*"), None),
        ("every Monday evening", ("0", "19", "1", "*"), "19:00"),
    ],
)
def test_schedule_words_in_chinese_and_english(words, fields, assumed):
    reading = read_schedule(words)
    spec = reading.spec
    assert (spec.minute, spec.hour, spec.day_of_week, spec.day_of_month) == fields
    assert (f"{reading.assumed:%H:%M}" if reading.assumed else None) == assumed


@pytest.mark.parametrize("words", ["每週", "sometime", "every Monday at 25:00"])
def test_words_that_say_no_schedule_are_a_clear_error(words):
    with pytest.raises(ValueError) as caught:
        read_schedule(words)
    assert str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("每週一早上請財務 Agent 生成週報告", ("財務", "生成週報告", "每週一早上")),
        ("每周一早上请财务 Agent 生成周报告", ("财务", "生成周报告", "每周一早上")),
        (
            "every Monday at 9, have finance summarise last week's invoices",
            ("finance", "summarise last week's invoices", "every Monday at 9"),
        ),
        ("每月1號請財務整理發票", ("財務", "整理發票", "每月1號")),
    ],
)
def test_the_offline_rule_reads_who_does_what_when(text, expected):
    args = schedule_prompt_args(text)
    assert (args["agent"], args["text"], args["when"]) == expected


@pytest.mark.parametrize(
    "text", ["what is the finance budget?", "請財務生成報告", "remind me daily"]
)
def test_the_offline_rule_leaves_other_words_alone(text):
    assert schedule_prompt_args(text) is None


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("agent_words", "when"), [("財務", "每週一早上"), ("财务专家", "每周一早上")]
)
def test_the_tool_creates_the_schedule_in_the_users_zone_and_confirms_it(
    clock, finance, agent_words, when
):
    user = user_in("Asia/Taipei", "tina")
    result = ask(user, agent=agent_words, text="生成週報告", when=when)
    assert result["status"] == "success"
    scheduled = ScheduledPrompt.objects.get(user=user)
    assert scheduled.agent == finance and scheduled.prompt == "生成週報告" and scheduled.enabled
    crontab = scheduled.crontab
    assert (crontab.minute, crontab.hour, crontab.day_of_week) == ("0", "9", "1")
    assert str(crontab.timezone) == "Asia/Taipei"
    assert PeriodicTask.objects.get(pk=scheduled.periodic_task_id).enabled
    # Wednesday 11 June 2025 10:00 in Taipei: next Monday 16 June, 09:00 there.
    data = result["data"]["schedule"]
    assert data["next_run_at"] == "2025-06-16T09:00:00+08:00"
    assert "09:00" in result["message"] and "Asia/Taipei" in result["message"]
    assert result["undo"]["url"] == f"/api/v1/schedules/{scheduled.pk}/"


@pytest.mark.django_db
def test_the_next_run_follows_dst_in_the_users_zone(clock, finance):
    user = user_in("America/New_York", "nora")
    clock.at = datetime(2025, 3, 5, 12, 0, tzinfo=NEW_YORK)  # a Wednesday, before DST starts
    first = ask(user, agent="finance", text="summarise invoices", when="every Monday at 9")
    # 10 March 2025 is after the switch (9 March): 09:00 EDT, UTC-4.
    assert first["data"]["schedule"]["next_run_at"] == "2025-03-10T09:00:00-04:00"
    clock.at = datetime(2025, 11, 1, 12, 0, tzinfo=NEW_YORK)  # Saturday; DST ends on the 2nd
    second = ask(user, agent="finance", text="summarise payroll", when="every Monday at 9")
    assert second["data"]["schedule"]["next_run_at"] == "2025-11-03T09:00:00-05:00"


@pytest.mark.django_db
def test_the_same_request_twice_makes_one_schedule(clock, finance, taipei_user):
    context = ToolContext(user=taipei_user, call_id="call_1")
    first = ask(taipei_user, context, agent="finance", text="週報告", when="每週一 09:00")
    again = ask(taipei_user, context, agent="finance", text="週報告", when="每週一 09:00")
    assert ScheduledPrompt.objects.count() == 1
    assert first["data"]["created"] is True and again["data"]["created"] is False
    assert again["data"]["schedule"]["id"] == first["data"]["schedule"]["id"]
    assert again["status"] == "success" and "Already scheduled" in again["message"]


@pytest.mark.django_db
def test_an_agent_the_user_may_not_use_is_refused(clock, taipei_user):
    make_agent("payroll", display_name="Payroll", access_group=Group.objects.create(name="hr"))
    result = ask(taipei_user, agent="payroll", text="run payroll", when="每月1號")
    assert result["status"] == "error" and result["data"]["reason"] == "agent_forbidden"
    assert "You may not use Payroll" in result["message"]
    assert not ScheduledPrompt.objects.exists() and not PeriodicTask.objects.exists()


@pytest.mark.django_db
def test_unknown_agents_and_bad_words_are_errors_the_model_can_correct(clock, finance, taipei_user):
    unknown = ask(taipei_user, agent="marketing", text="x", when="every day at 9")
    assert unknown["status"] == "error" and "Finance expert" in unknown["message"]
    bad = ask(taipei_user, agent="finance", text="x", when="someday")
    assert bad["status"] == "error" and bad["data"]["argument"] == "when"
    assert not ScheduledPrompt.objects.exists()


@pytest.mark.django_db
def test_the_undo_deletes_the_schedule_for_its_owner_only(client, clock, finance, taipei_user):
    result = ask(taipei_user, agent="finance", text="週報告", when="每週一 09:00")
    url = result["undo"]["url"]
    other = user_in("Asia/Taipei", "otto")
    client.force_login(other)
    assert client.delete(url).status_code == 404
    assert ScheduledPrompt.objects.count() == 1
    client.force_login(taipei_user)
    assert client.delete(url).status_code == 204
    assert not ScheduledPrompt.objects.exists() and not PeriodicTask.objects.exists()
    assert client.delete(url).status_code == 404


def finished_turn(user, words: str, message_id: uuid.UUID, session_id: uuid.UUID) -> Run:
    """Send `words` as the user (as the chat page does) and wait for the turn to end."""
    turn_start(user=user, session_id=session_id, message_id=message_id, text=words)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        root = Run.objects.filter(parent=None, user_message_id=message_id).first()
        if root is not None and root.status in FINAL_STATUSES:
            return root
        time.sleep(0.05)
    raise AssertionError("the turn did not finish")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("words", "prompt", "confirmation"),
    [
        ("每週一早上請財務 Agent 生成週報告", "生成週報告", "財務專家"),
        ("每周一早上请财务 Agent 生成周报告", "生成周报告", "财务专家"),
        (
            "every Monday at 9, have finance summarise last week's invoices",
            "summarise last week's invoices",
            "Finance expert",
        ),
    ],
)
def test_the_offline_demo_schedules_what_the_user_asks_once(
    clock, taipei_user, words, prompt, confirmation
):
    call_command("seed_demo", stdout=StringIO())
    message_id, session_id = uuid.uuid4(), uuid.uuid4()
    root = finished_turn(taipei_user, words, message_id, session_id)
    assert root.status == "succeeded", root.error
    assert root.routing.get("target") is None  # routing did not send it to finance first
    scheduled = ScheduledPrompt.objects.get(user=taipei_user)
    assert scheduled.agent.name == "finance" and scheduled.prompt == prompt
    assert confirmation in root.answer and "Asia/Taipei" in root.answer
    # The same message delivered again (same id) starts nothing and makes nothing.
    turn_start(user=taipei_user, session_id=session_id, message_id=message_id, text=words)
    assert Run.objects.filter(parent=None).count() == 1
    assert ScheduledPrompt.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "text",
    [
        "每週一早上請財務 Agent 生成週報告",
        "every Monday at 9, have finance summarise last week's invoices",
    ],
)
def test_routing_keeps_a_standing_order_with_the_entry_agent_that_can_schedule(
    finance, taipei_user, text
):
    policy = routing_seed(name="departments")
    entry = {"name": "assistant", "provider": "offline", "model": "", "tool_keys": []}
    without = routing_decide(
        RoutingInput(text=text, policy=policy, entry=entry, targets=[finance], user=taipei_user)
    )
    assert without.target == "finance"  # no tool to claim it: the finance rule routes it
    entry["tool_keys"] = ["schedule_prompt"]
    decision = routing_decide(
        RoutingInput(text=text, policy=policy, entry=entry, targets=[finance], user=taipei_user)
    )
    assert decision.target is None and decision.matched_rule == "tool:schedule_prompt"
    assert "schedule_prompt" in decision.reason and "schedule_prompt" in decision.tools
    # A finance question is still the finance expert's.
    question = routing_decide(
        RoutingInput(
            text="財務預算還剩多少？",
            policy=policy,
            entry=entry,
            targets=[finance],
            user=taipei_user,
        )
    )
    assert question.target == "finance"


@pytest.mark.django_db
def test_words_naming_several_agents_ask_which_with_a_button_each(clock, taipei_user):
    make_agent("finance-tw", display_name="Finance Taiwan")
    make_agent("finance-us", display_name="Finance US")
    result = ask(taipei_user, agent="finance", text="週報告", when="每週一 09:00")
    assert result["status"] == "need_confirmation"
    assert result["ask"]["answer_into"] == "agent"
    assert sorted(result["ask"]["values"]) == ["finance-tw", "finance-us"]
    assert not ScheduledPrompt.objects.exists()
    chosen = ask(taipei_user, agent="finance-us", text="週報告", when="每週一 09:00")
    assert chosen["status"] == "success"
    assert ScheduledPrompt.objects.get().agent.name == "finance-us"


@pytest.mark.parametrize(
    "text",
    [
        "every Monday at 9, have finance summarise last week's invoices and email it to me",
        "每週一早上請財務生成週報告，寄給我",
    ],
)
def test_the_offline_rule_reads_a_request_for_mail(text):
    args = schedule_prompt_args(text)
    assert args["by_email"] is True
    assert "mail" not in args["text"] and "寄" not in args["text"]

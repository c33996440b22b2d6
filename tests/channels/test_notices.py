"""Reminders and scheduled prompts' answers reach the LINE and Slack accounts a user linked
for them, once each (a second pass sends nothing again), and none where the user turned them
off or linked nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule

from chat.channels.delivery import answer_notice
from chat.channels.models import ChannelLink
from delegation.models import Run
from reminders.dispatch import reminders_dispatch
from reminders.models import Reminder, ScheduledPrompt
from reminders.services.schedules import scheduled_prompt_run, scheduled_prompt_save
from tests.factories import make_agent, make_user
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def due_reminder(user, content: str) -> Reminder:
    at = timezone.now() - timedelta(seconds=1)
    return Reminder.objects.create(
        user=user, remind_at=at, due_at=at, content=content, language="zh-hant"
    )


def test_a_due_reminder_goes_to_the_linked_line_account_once(line):
    alice = make_user("alice")
    ChannelLink.objects.create(channel="line", external_id="U1111", user=alice)
    due_reminder(alice, "下午三點：打電話給安娜")
    reminders_dispatch()
    reminders_dispatch()
    [push] = line.pushes
    assert push["to"] == "U1111" and "打電話給安娜" in push["messages"][0]["text"]


def test_a_link_with_reminders_off_and_an_unlinked_user_get_none(line):
    alice, bob = make_user("alice"), make_user("bob")
    ChannelLink.objects.create(channel="line", external_id="U1111", user=alice, reminders=False)
    due_reminder(alice, "call Ana")
    due_reminder(bob, "call Bo")
    assert reminders_dispatch().sent == 2
    assert not line.pushes and not line.replies


def test_the_user_turns_reminders_off_on_the_links_page(client, line):
    alice = make_user("alice")
    link = ChannelLink.objects.create(channel="line", external_id="U1111", user=alice)
    client.force_login(alice)
    assert "Reminders here: on" in client.get("/channels/links/").content.decode()
    client.post(f"/channels/links/{link.pk}/reminders/", {"on": "0"})
    link.refresh_from_db()
    assert not link.reminders
    other = ChannelLink.objects.create(channel="line", external_id="U2", user=make_user("bob"))
    assert client.post(f"/channels/links/{other.pk}/reminders/", {"on": "0"}).status_code == 404


def test_a_reminder_is_a_direct_message_on_slack(slack):
    alice = make_user("alice")
    ChannelLink.objects.create(channel="slack", external_id="W111", user=alice)
    due_reminder(alice, "Submit the Q3 budget")
    reminders_dispatch()
    [message] = slack.messages.values()
    assert message["channel"] == "W111" and "Q3 budget" in message["text"]
    assert "thread_ts" not in message


def made_before(scheduled: ScheduledPrompt, at: datetime) -> None:
    """A schedule made weeks before `at`: a run then takes its slot (none before it existed)."""
    ScheduledPrompt.objects.filter(pk=scheduled.pk).update(created_at=at - timedelta(days=30))


def test_a_scheduled_prompts_answer_goes_to_the_linked_account_once_under_its_name(line):
    alice = make_user("alice")
    ChannelLink.objects.create(channel="line", external_id="U1111", user=alice)
    finance = make_agent("finance", tool_keys=["calculate"])
    weekly = CrontabSchedule.objects.create(minute="0", hour="8", day_of_week="1")
    scheduled = scheduled_prompt_save(
        scheduled=ScheduledPrompt(
            name="每週報告", user=alice, agent=finance, prompt="6*7 是多少？", crontab=weekly
        )
    )
    monday = datetime(2025, 6, 16, 8, 0, tzinfo=UTC)  # its slot (the crontab's zone: UTC)
    made_before(scheduled, monday)
    assert scheduled_prompt_run(scheduled_id=scheduled.pk, now=monday) == "sent"
    assert scheduled_prompt_run(scheduled_id=scheduled.pk, now=monday) == "duplicate"
    wait_until(lambda: line.pushes, what="the answer pushed to LINE")
    [push] = line.pushes
    text = push["messages"][0]["text"]
    assert push["to"] == "U1111" and text.startswith("每週報告\n\n") and "42" in text


def test_a_scheduled_prompts_answer_reaches_no_account_of_anyone_else(line):
    alice, bob = make_user("alice"), make_user("bob")
    ChannelLink.objects.create(channel="line", external_id="UBOB", user=bob)
    finance = make_agent("finance", tool_keys=["calculate"])
    weekly = CrontabSchedule.objects.create(minute="0", hour="8", day_of_week="1")
    scheduled = scheduled_prompt_save(
        scheduled=ScheduledPrompt(
            name="Weekly", user=alice, agent=finance, prompt="What is 6*7?", crontab=weekly
        )
    )
    made_before(scheduled, timezone.now())
    scheduled_prompt_run(scheduled_id=scheduled.pk, now=timezone.now())
    wait_until(
        lambda: Run.objects.filter(parent=None, status="succeeded").exists(), what="the answer"
    )
    assert answer_notice(run_id=Run.objects.get(parent=None).id) == 0  # alice linked nothing
    assert not line.pushes

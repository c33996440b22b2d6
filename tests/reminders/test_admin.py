"""Admin: tasks and reminders with filters and actions (send now, cancel, mark done), and
scheduled agent runs whose beat entry follows the form."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from reminders.models import Reminder, ReminderStatus, ScheduledPrompt, Task, TaskStatus
from tests.factories import make_agent, make_user
from tests.reminders.conftest import user_in

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def admin_client(client):
    admin = make_user("root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    return client


def reminder(user, status=ReminderStatus.PENDING, days=1) -> Reminder:
    at = timezone.now() + timedelta(days=days)
    return Reminder.objects.create(user=user, remind_at=at, due_at=at, content="x", status=status)


def test_changelists_load_with_filters(admin_client, user):
    Task.objects.create(user=user, title="Airport", due_date=date(2025, 6, 14), segment="morning")
    reminder(user)
    for model, query in [
        ("task", "?status__exact=pending&priority__exact=normal"),
        ("reminder", "?status__exact=pending&channel__exact=chat&late__exact=0"),
        ("scheduledprompt", "?enabled__exact=1"),
    ]:
        response = admin_client.get(reverse(f"admin:reminders_{model}_changelist") + query)
        assert response.status_code == 200, model
    page = admin_client.get(reverse("admin:reminders_task_changelist")).content.decode()
    assert "morning (08:00–12:00)" in page


def test_send_now_and_cancel_actions(admin_client, user):
    later, failed, sent = (
        reminder(user),
        reminder(user, ReminderStatus.FAILED),
        reminder(user, ReminderStatus.SENT),
    )
    url = reverse("admin:reminders_reminder_changelist")
    admin_client.post(
        url, {"action": "send_now", "_selected_action": [later.pk, failed.pk, sent.pk]}
    )
    from config.enqueue import wait_for_in_process_tasks

    wait_for_in_process_tasks()
    statuses = dict(Reminder.objects.values_list("pk", "status"))
    assert statuses == {later.pk: "sent", failed.pk: "sent", sent.pk: "sent"}
    pending, done = reminder(user), Reminder.objects.get(pk=later.pk)
    admin_client.post(url, {"action": "cancel", "_selected_action": [pending.pk, done.pk]})
    assert Reminder.objects.get(pk=pending.pk).status == ReminderStatus.CANCELLED
    assert Reminder.objects.get(pk=done.pk).status == ReminderStatus.SENT


def test_mark_done_action_cancels_the_tasks_reminders(admin_client, user):
    task = Task.objects.create(user=user, title="Airport", due_date=date(2025, 6, 14))
    pending = reminder(user)
    Reminder.objects.filter(pk=pending.pk).update(task=task)
    admin_client.post(
        reverse("admin:reminders_task_changelist"),
        {"action": "mark_done", "_selected_action": [task.pk]},
    )
    assert Task.objects.get().status == TaskStatus.DONE
    assert Reminder.objects.get().status == ReminderStatus.CANCELLED


def test_a_reminder_added_in_admin_is_due_at_its_time(admin_client, user):
    at = timezone.now() + timedelta(hours=3)
    response = admin_client.post(
        reverse("admin:reminders_reminder_add"),
        {
            "user": user.pk,
            "remind_at_0": at.strftime("%Y-%m-%d"),
            "remind_at_1": at.strftime("%H:%M:%S"),
            "content": "Stand up and stretch",
            "channel": "chat",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    created = Reminder.objects.get()
    assert created.due_at == created.remind_at and created.status == ReminderStatus.PENDING


def test_scheduled_prompt_admin_keeps_the_beat_entry(admin_client, user):
    agent = make_agent("finance")
    response = admin_client.post(
        reverse("admin:reminders_scheduledprompt_add"),
        {
            "name": "Weekly report",
            "user": user.pk,
            "agent": agent.pk,
            "prompt": "Summarize last week's spending.",
            "schedule": "every Monday at 8",
            "enabled": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    scheduled = ScheduledPrompt.objects.get()
    assert PeriodicTask.objects.get(pk=scheduled.periodic_task_id).task == (
        "reminders.run_scheduled_prompt"
    )
    admin_client.post(
        reverse("admin:reminders_scheduledprompt_delete", args=[scheduled.pk]), {"post": "yes"}
    )
    assert not ScheduledPrompt.objects.exists()
    assert not PeriodicTask.objects.filter(task="reminders.run_scheduled_prompt").exists()


def test_a_schedule_in_chinese_words_becomes_its_crontab_in_the_users_zone(admin_client):
    taipei = user_in("Asia/Taipei", "tina")
    agent = make_agent("finance")
    add = reverse("admin:reminders_scheduledprompt_add")
    form = {"name": "週報", "user": taipei.pk, "agent": agent.pk, "prompt": "週報", "enabled": "on"}
    assert admin_client.post(add, {**form, "schedule": "每週一 09:00"}).status_code == 302
    scheduled = ScheduledPrompt.objects.get()
    crontab = scheduled.crontab
    assert (crontab.minute, crontab.hour, crontab.day_of_week) == ("0", "9", "1")
    assert str(crontab.timezone) == "Asia/Taipei"
    assert PeriodicTask.objects.get(pk=scheduled.periodic_task_id).crontab == crontab
    change = reverse("admin:reminders_scheduledprompt_change", args=[scheduled.pk])
    assert 'value="every Monday at 09:00"' in admin_client.get(change).content.decode()
    listed = admin_client.get(reverse("admin:reminders_scheduledprompt_changelist"))
    assert "every Monday at 09:00 (Asia/Taipei)" in listed.content.decode()
    # The same words again reuse the crontab; new words make another one.
    again = {**form, "name": "Other", "schedule": "every monday at 9am"}
    assert admin_client.post(add, again).status_code == 302
    assert CrontabSchedule.objects.count() == 1


def test_bad_schedule_words_are_a_form_error_and_save_nothing(admin_client, user):
    agent = make_agent("finance")
    add = reverse("admin:reminders_scheduledprompt_add")
    form = {"name": "Report", "user": user.pk, "agent": agent.pk, "prompt": "Go", "enabled": "on"}
    for words, reason in [
        ("every Monday", "No time of day"),
        ("every monday at 3", "could be 03:00 or 15:00"),
        ("61 9 * * *", "not a valid crontab expression"),
    ]:
        page = admin_client.post(add, {**form, "schedule": words})
        assert page.status_code == 200 and reason in page.content.decode(), words
    assert not ScheduledPrompt.objects.exists() and not CrontabSchedule.objects.exists()


def test_the_user_is_picked_by_name(admin_client, user):
    page = admin_client.get(reverse("admin:reminders_scheduledprompt_add")).content.decode()
    assert 'class="admin-autocomplete' in page and 'name="user"' in page
    found = admin_client.get(
        "/admin/autocomplete/",
        {
            "term": user.username[:3],
            "app_label": "reminders",
            "model_name": "scheduledprompt",
            "field_name": "user",
        },
    ).json()
    assert [r["text"] for r in found["results"]] == [user.username]


def test_deleting_a_task_in_admin_cancels_its_pending_reminder(admin_client, user):
    task = Task.objects.create(user=user, title="Airport", due_date=date(2025, 6, 14))
    pending = reminder(user)
    Reminder.objects.filter(pk=pending.pk).update(task=task)
    admin_client.post(reverse("admin:reminders_task_delete", args=[task.pk]), {"post": "yes"})
    assert not Task.objects.exists()
    assert Reminder.objects.get().status == ReminderStatus.CANCELLED

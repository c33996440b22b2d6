"""The demo planner team (seed_demo) and the offline model's planner rules, end to end."""

from __future__ import annotations

import time
import uuid
from datetime import date, datetime
from datetime import time as dt_time
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import translation
from django.utils.translation import gettext

from agents.demo import PLANNER_TEAM
from agents.models import Agent
from delegation.humans.decisions import item_decide
from delegation.humans.models import InboxItem
from delegation.models import FINAL_STATUSES, Run
from delegation.turns import turn_start
from reminders.dates import day_long, when_said
from reminders.models import Reminder, Task
from reminders.offline_rules import PLANNER_RULES
from reminders.remind_time import rule_name
from tests.reminders.conftest import TAIPEI

OWN_TOOLS = {
    "tasks": {"create_task", "query_tasks", "modify_task", "finish_task", "remove_task"},
    "calendar": {"get_day_schedule", "find_free_slots"},
    "weather": {"get_weather"},
    "reminders": {"schedule_reminder", "list_reminders", "cancel_reminder"},
}


def seed() -> None:
    call_command("seed_demo", stdout=StringIO())


def said(language: str, message: str, **values: object) -> str:
    """A tool message as it reads in `language` (values given as callables are formatted in
    it too): a run answers in the language of the user's words."""
    with translation.override(language):
        filled = {k: v() if callable(v) else v for k, v in values.items()}
        return gettext(message) % filled


@pytest.mark.django_db
def test_the_entry_agent_delegates_to_planner_experts_holding_only_their_own_tools():
    seed()
    assistant = Agent.objects.get(name="assistant", is_entry=True)
    assert set(PLANNER_TEAM) <= set(assistant.allowed_subagents.values_list("name", flat=True))
    for name, tools in OWN_TOOLS.items():
        expert = Agent.objects.get(name=name)
        assert set(expert.tool_keys) == tools, name
        assert expert.delegatable and expert.enabled and not expert.allowed_subagents.exists()


@pytest.mark.django_db
def test_an_older_demo_install_gets_the_new_experts_linked_once():
    seed()
    Agent.objects.filter(name__in=PLANNER_TEAM).delete()  # as before this team existed
    assistant = Agent.objects.get(name="assistant")
    assistant.allowed_subagents.remove(Agent.objects.get(name="archivist"))  # an admin's edit
    seed()
    linked = set(assistant.allowed_subagents.values_list("name", flat=True))
    assert set(PLANNER_TEAM) <= linked and "archivist" not in linked
    assistant.refresh_from_db()
    assert assistant.version == 2 and "added experts" in assistant.revisions.first().comment
    assistant.allowed_subagents.remove(Agent.objects.get(name="weather"))
    seed()  # an expert the admin removed later is not forced back
    assert "weather" not in set(assistant.allowed_subagents.values_list("name", flat=True))


@pytest.mark.parametrize(
    ("words", "key", "arguments"),
    [
        (
            "add a task: pick someone up at the airport Saturday morning",
            "create_task",
            {"title": "pick someone up at the airport", "date": "saturday", "segment": "morning"},
        ),
        (
            "添加任务：周末早上去机场接人",
            "create_task",
            {"title": "去机场接人", "date": "周末", "segment": "morning"},
        ),
        (
            "add dentist tomorrow at 2:30 pm",
            "create_task",
            {"title": "dentist", "date": "tomorrow", "start": "2:30 pm"},
        ),
        (
            "添加 9点半 开会 明天",
            "create_task",
            {"title": "开会", "date": "明天", "start": "9点半"},
        ),
        (
            "添加任务：明天下午3点开会",
            "create_task",
            {"title": "开会", "date": "明天", "start": "下午3点"},
        ),
        (
            "添加任务：下週六晚上八點聚餐",
            "create_task",
            {"title": "聚餐", "date": "下週六", "start": "晚上八點"},
        ),
        ("show my tasks for tomorrow", "query_tasks", {"date": "tomorrow"}),
        ("mark buy milk as done", "finish_task", {"title": "buy milk"}),
        ("完成买牛奶", "finish_task", {"title": "买牛奶"}),
        ("delete the task buy milk", "remove_task", {"title": "buy milk"}),
        (
            "move the airport task to sunday afternoon",
            "modify_task",
            {"title": "airport", "date": "sunday", "segment": "afternoon"},
        ),
        ("把买牛奶改到明天", "modify_task", {"title": "买牛奶", "date": "明天"}),
        ("what is my schedule tomorrow", "get_day_schedule", {"date": "tomorrow"}),
        ("when am I free on friday", "find_free_slots", {"date": "friday"}),
        ("weather in Paris tomorrow", "get_weather", {"city": "Paris", "date": "tomorrow"}),
        ("上海周末天气", "get_weather", {"city": "Shanghai", "date": "周末"}),
        (
            "remind me about the airport pickup in Taipei",
            "schedule_reminder",
            {"title": "airport pickup", "city": "Taipei"},
        ),
        ("提醒我去机场接人", "schedule_reminder", {"title": "去机场接人"}),
        (
            "Remind me to call Ana tomorrow at 9",
            "schedule_reminder",
            {"title": "call Ana", "date": "tomorrow", "start": "9"},
        ),
        (
            "提醒我明天下午三點開會",
            "schedule_reminder",
            {"title": "開會", "date": "明天", "start": "下午三點"},
        ),
        ("show my reminders", "list_reminders", {}),
        ("cancel reminder #12", "cancel_reminder", {"reminder_id": 12}),
        ("取消机场的提醒", "cancel_reminder", {"title": "机场"}),
    ],
)
def test_offline_rules_read_arguments_from_words(words, key, arguments):
    assert PLANNER_RULES[key](words) == arguments
    first = next(k for k, rule in PLANNER_RULES.items() if rule(words) is not None)
    assert first == key  # an agent holding every planner tool would pick this one


@pytest.mark.parametrize("words", ["hello there", "what is 6*7?", "what time is it today?"])
def test_offline_rules_stay_out_of_ordinary_messages(words):
    assert all(rule(words) is None for rule in PLANNER_RULES.values())


def turn(user, words: str) -> Run:
    turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=words)
    deadline = time.monotonic() + 60  # a loaded CI machine: three experts, each a thread hop
    while time.monotonic() < deadline:
        root = Run.objects.filter(parent=None, task=words).first()
        if root is not None and root.status in FINAL_STATUSES:
            return root
        time.sleep(0.05)
    raise AssertionError("the turn did not finish")


def turn_answering_the_city(user, words: str, city: str) -> Run:
    """A turn whose weather expert asks the user which city (answered as the page would)."""
    return turn_answering(user, words, city)


def turn_answering(user, words: str, answer: str) -> Run:
    """A turn whose tools ask the user (answered `answer`, as the page's answer box would)."""
    turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=words)
    deadline = time.monotonic() + 60  # a loaded CI machine: three experts, each a thread hop
    while time.monotonic() < deadline:
        root = Run.objects.filter(parent=None, task=words).first()
        if root is not None and root.status in FINAL_STATUSES:
            return root
        asked = InboxItem.objects.filter(status="pending", user=user).first()
        if asked is not None:
            item_decide(item=asked, user=user, decision="approve", answer=answer)
        time.sleep(0.05)
    raise AssertionError("the turn did not finish")


@pytest.mark.django_db(transaction=True)
def test_the_offline_demo_team_plans_and_reminds(taipei_user, clock, fixed_weather, settings):
    settings.DEFAULT_MODEL_PROVIDER = "offline"
    seed()
    fixed_weather["taipei"] = "rain"
    added = turn(taipei_user, "add a task: pick up Anna at the airport Saturday morning")
    assert "Created “pick up Anna at the airport” on Saturday 14 June 2025" in added.answer
    assert Task.objects.get().segment == "morning"
    # Only a similar title: the user is asked which task (a button per candidate); "no" sets
    # nothing, and the answer says so in plain words.
    guessed = turn_answering(taipei_user, "remind me about the airport pickup in Taipei", "no")
    asked = InboxItem.objects.get(tool="schedule_reminder")
    assert asked.audience == "user"
    assert asked.options[0].endswith(
        "“pick up Anna at the airport” (Saturday 2025-06-14, morning (08:00–12:00))"
    )
    assert "No pending task is titled “airport pickup”" in guessed.answer
    assert "task_id" not in guessed.answer and not Reminder.objects.exists()
    reminded = turn(taipei_user, "remind me about Pick up Anna at the airport in Taipei")
    assert "Reminder set for Fri 13 Jun at 20:00 (Asia/Taipei)" in reminded.answer
    reminder = Reminder.objects.get()
    assert reminder.remind_at == datetime(2025, 6, 13, 20, tzinfo=TAIPEI)
    assert "bring an umbrella" in reminder.content
    forecast = turn(taipei_user, "what's the weather in Taipei on saturday?")
    assert "Taipei on Saturday 14 June: rain" in forecast.answer


@pytest.mark.django_db(transaction=True)
def test_the_offline_team_saves_an_afternoon_time_in_24_hours(taipei_user, clock, settings):
    settings.DEFAULT_MODEL_PROVIDER = "offline"
    seed()
    added = turn(taipei_user, "添加任务：明天下午3点开会")
    created = said(
        "zh-hans",
        "Created “%(title)s” on %(day)s, %(when)s.",
        title="开会",
        day=lambda: day_long(date(2025, 6, 12)),
        when="15:00",
    )
    assert created in added.answer and "星期四" in added.answer  # in the user's language
    assert Task.objects.get().start_time == dt_time(15)
    # 03:00 or 15:00: asked with buttons, not guessed; the user's choice is saved.
    turn_answering(taipei_user, "添加任务：后天3点开会", "15:00")
    question = InboxItem.objects.get(tool="create_task")
    assert question.audience == "user" and question.options == ["03:00", "15:00"]
    later = Task.objects.get(due_date=date(2025, 6, 13))
    assert later.title == "开会" and later.start_time == dt_time(15)


@pytest.mark.django_db(transaction=True)
def test_the_offline_team_reads_a_task_written_in_traditional_chinese(taipei_user, clock, settings):
    settings.DEFAULT_MODEL_PROVIDER = "offline"
    seed()
    added = turn(taipei_user, "新增任務：明天下午3點開會")
    assert Task.objects.get().start_time == dt_time(15)
    assert "開會" in added.answer


@pytest.mark.parametrize(
    ("words", "title", "language", "friday"),
    [
        ("周末早上去机场接人", "去机场接人", "zh-hans", "星期五"),
        (
            "Pick up Anna at the airport on Saturday morning",
            "Pick up Anna at the airport",
            "en",
            "Fri 13 Jun",
        ),
    ],
)
@pytest.mark.django_db(transaction=True)
def test_the_offline_entry_agent_plans_an_errand_across_three_experts(
    taipei_user, clock, settings, words, title, language, friday
):
    settings.DEFAULT_MODEL_PROVIDER = "offline"
    seed()
    root = turn_answering_the_city(taipei_user, words, "Taipei")
    experts = list(Run.objects.filter(parent=root).order_by("created_at"))
    # One after the other: the task first, then the weather, then the reminder for that task.
    assert [r.agent_config["name"] for r in experts] == ["tasks", "weather", "reminders"]
    assert all(r.status == "succeeded" for r in experts)
    assert experts[0].finished_at <= experts[1].created_at <= experts[2].created_at
    task = Task.objects.get()
    assert (task.title, task.due_date.isoformat(), task.segment) == (title, "2025-06-14", "morning")
    reminder = Reminder.objects.get()
    assert reminder.remind_at == datetime(2025, 6, 13, 20, tzinfo=TAIPEI)
    assert reminder.language == language  # a late notice will be written in it too
    # The answer reports every step, in the user's language.
    reminder_set = said(
        language,
        "Reminder set for %(when)s (%(zone)s): no time was asked for it, so %(rule)s.",
        when=lambda: when_said(datetime(2025, 6, 13, 20, tzinfo=TAIPEI), date(2025, 6, 11)),
        rule=lambda: rule_name("20:00 the day before"),
        zone="Asia/Taipei",
    )
    assert title in root.answer and reminder_set in root.answer and friday in root.answer
    # The weather needs a place: the user was asked (not told to tell the model), and answered.
    asked = InboxItem.objects.get(tool="get_weather")
    assert asked.audience == "user" and asked.question == said(language, "Which city is it in?")
    assert "Taipei" in root.answer and "Ask the user" not in root.answer


@pytest.mark.django_db(transaction=True)
def test_a_message_routed_by_its_words_is_not_turned_into_a_plan(taipei_user, clock, settings):
    settings.DEFAULT_MODEL_PROVIDER = "offline"
    seed()
    root = turn(taipei_user, "add a task: pick up Anna at the airport Saturday morning")
    assert [r.agent_config["name"] for r in Run.objects.filter(parent=root)] == ["tasks"]
    assert not Reminder.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("words", "title", "starts", "remind_at", "language"),
    [
        ("Remind me to call Ana tomorrow at 9", "call Ana", dt_time(9), (12, 9), "en"),
        ("提醒我明天下午三點開會", "開會", dt_time(15), (12, 15), "zh-hant"),
        ("提醒我明天下午三点开会", "开会", dt_time(15), (12, 15), "zh-hans"),
        ("提醒我今天下午三點開會", "開會", dt_time(15), (11, 15), "zh-hant"),
    ],
)
def test_the_offline_team_reminds_at_the_time_asked(
    taipei_user, clock, settings, words, title, starts, remind_at, language
):
    """The time said is when the reminder comes (not 20:00 the evening before), and the
    answer says when, in the user's timezone and language."""
    settings.DEFAULT_MODEL_PROVIDER = "offline"
    seed()
    run = turn(taipei_user, words)
    task = Task.objects.get()
    assert (task.title, task.start_time) == (title, starts)
    reminder = Reminder.objects.get(task=task)
    day, hour = remind_at
    at = datetime(2025, 6, day, hour, tzinfo=TAIPEI)
    assert reminder.remind_at == at
    assert title in run.answer and "No pending task" not in run.answer
    with translation.override(language):
        when = when_said(at, date(2025, 6, 11))
    assert f"{when} (Asia/Taipei)" in run.answer or f"{when}（Asia/Taipei）" in run.answer

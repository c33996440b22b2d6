"""manage.py seed_demo: the demo team once, admins' edits kept, demo accounts only in DEBUG."""

from __future__ import annotations

import uuid
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.demo import DEMO_AGENTS
from agents.models import Agent, AgentRevision
from agents.registry import unknown_keys
from delegation.models import Run
from delegation.turns import turn_start
from tests.factories import make_agent

pytestmark = pytest.mark.django_db

DEMO_NAMES = sorted(spec["name"] for spec in DEMO_AGENTS)


def seed(*args: str) -> str:
    out = StringIO()
    call_command("seed_demo", *args, stdout=out)
    return out.getvalue()


def test_running_twice_creates_the_demo_team_once():
    assert "Demo agents created: assistant" in seed()
    assert "none (already there)" in seed()
    assert sorted(Agent.objects.values_list("name", flat=True)) == DEMO_NAMES
    for agent in Agent.objects.all():
        assert agent.version == 1
        assert list(agent.revisions.values_list("version", flat=True)) == [1]
    assert AgentRevision.objects.count() == len(DEMO_NAMES)


def test_demo_team_has_one_entry_agent_and_a_depth_two_chain():
    seed()
    seed()
    entry = Agent.objects.get(is_entry=True)
    assert entry.name == "assistant"
    subagents = sorted(entry.allowed_subagents.values_list("name", flat=True))
    assert subagents == [
        "archivist",
        "calendar",
        "clock",
        "finance",
        "hr",
        "legal",
        "reminders",
        "tasks",
        "translator",
        "weather",
    ]
    assert entry.revisions.get().snapshot["allowed_subagents"] == subagents
    finance = Agent.objects.get(name="finance")
    assert list(finance.allowed_subagents.values_list("name", flat=True)) == ["math"]


def test_every_demo_tool_key_is_registered():
    seed()
    for agent in Agent.objects.all():
        # Knowledge experts act through the kb tools their knowledge bases give them; a remote
        # agent (A2A) acts on its own platform.
        acts = agent.tool_keys or agent.allowed_subagents.exists() or agent.provider == "a2a"
        assert acts or agent.answer_from_knowledge_only, f"{agent.name} can act"
        assert unknown_keys(agent.tool_keys) == [], agent.name


def test_second_run_keeps_an_admins_edit():
    seed()
    Agent.objects.filter(name="math").update(
        display_name="Numbers", tool_keys=["calculate", "current_time"], enabled=False
    )
    seed()
    math = Agent.objects.get(name="math")
    assert math.display_name == "Numbers"
    assert math.tool_keys == ["calculate", "current_time"] and not math.enabled
    assert math.revisions.count() == 1


def test_an_admins_entry_agent_is_kept():
    make_agent("concierge", is_entry=True)
    seed()
    assert list(Agent.objects.filter(is_entry=True).values_list("name", flat=True)) == ["concierge"]


def test_users_option_refuses_without_debug_and_writes_nothing(settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG"):
        seed("--users")
    assert not get_user_model().objects.exists()
    assert not Agent.objects.exists()


def test_users_option_creates_demo_accounts_once_with_debug(settings):
    settings.DEBUG = True
    output = seed("--users")
    assert "User created: admin" in output and "User created: demo" in output
    assert "User created" not in seed("--users")
    users = {u.username: u for u in get_user_model().objects.all()}
    assert sorted(users) == ["admin", "demo"]
    assert users["admin"].is_superuser and users["admin"].is_staff
    assert not users["demo"].is_staff and not users["demo"].is_superuser
    assert users["admin"].check_password("admin") and users["demo"].check_password("demo")
    assert sorted(Agent.objects.values_list("name", flat=True)) == DEMO_NAMES


@pytest.mark.django_db(transaction=True)
def test_the_demo_answers_department_questions_from_knowledge_with_citations(settings):
    """The README's promise with the offline model: 財務部最新的檔案 and 人資假勤規定, cited."""
    settings.TASKS_RUN_SYNC = True
    settings.DEFAULT_MODEL_PROVIDER = "offline"
    settings.DEBUG = True  # --users refuses otherwise
    call_command("seed_demo", "--users", stdout=StringIO())
    demo = get_user_model().objects.get(username="demo")

    def ask(text: str) -> Run:
        sent = turn_start(user=demo, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=text)
        return Run.objects.get(pk=sent.run.id)

    latest = ask("財務部最新的檔案是什麼？")
    assert latest.routing["target"] == "finance"
    assert "2026年第三季財務報告" in latest.answer and latest.citations[0]["chunk_id"] is None
    rules = ask("人資假勤規定")
    assert rules.routing["target"] == "hr" and rules.citations
    assert all(c["title"] == "人資假勤規定" for c in rules.citations)
    english = ask("What is the leave policy for sick leave?")
    assert "30 days" in english.answer and english.citations
    legal = ask("法務：我們的NDA範本是什麼？")
    assert legal.routing["mode"] == "STRICT" and "缺少" in legal.answer and not legal.citations

"""Runs you can find: the list shows each turn's question and the answer's first line
(escaped) and searches them; the trace says "conflict" / "needs confirmation", not "ok"."""

from __future__ import annotations

import re
import uuid

import pytest

from chat.models import ChatMessage, ChatSession, MessageRole
from delegation.admin import call_state, first_line
from delegation.models import Run, RunStatus
from delegation.runs.create import run_create
from tests.factories import make_agent

pytestmark = pytest.mark.django_db

RUNS = "/admin/delegation/run/"


def turn(user, agent, question, **fields):
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
    run = run_create(agent=agent, user=user, session=session, task=question, transcript=[])
    Run.objects.filter(pk=run.pk).update(**fields)
    return Run.objects.get(pk=run.pk)


@pytest.fixture
def turns(user):
    boss = make_agent("boss")
    leave = turn(
        user,
        boss,
        "How many days of leave do I have left?",
        status=RunStatus.SUCCEEDED,
        answer="\n\nYou have <b>12 days</b> left.\nSee the HR policy [1].",
    )
    pay = turn(
        user,
        boss,
        "請問這個月的薪資什麼時候發？",
        status=RunStatus.SUCCEEDED,
        answer="薪資於每月五日發放。",
    )
    broken = turn(
        user,
        boss,
        "Book the airport taxi",
        status=RunStatus.FAILED,
        error={"code": "model_error", "message": "The model did not answer."},
    )
    return leave, pay, broken


def rows(page: str) -> list[str]:
    body = page.split('id="result_list"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return re.findall(r"<tr\b.*?</tr>", body, re.S)


def test_the_list_shows_the_question_and_the_answers_first_line_escaped(admin_client, turns):
    page = admin_client.get(RUNS).content.decode()
    assert "How many days of leave do I have left?" in page
    assert "You have &lt;b&gt;12 days&lt;/b&gt; left." in page  # escaped, first non-empty line
    assert "See the HR policy" not in page  # only the first line
    assert "<b>12 days</b>" not in page
    assert "請問這個月的薪資什麼時候發？" in page and "薪資於每月五日發放。" in page
    assert '<span class="run-error">The model did not answer.</span>' in page
    assert 'class="column-exchange' in page


def test_search_finds_runs_by_question_and_by_answer(admin_client, turns):
    leave, pay, broken = turns
    by_question = admin_client.get(RUNS, {"q": "leave"}).content.decode()
    assert str(leave.pk) in by_question and str(pay.pk) not in by_question
    by_answer = admin_client.get(RUNS, {"q": "五日發放"}).content.decode()
    assert str(pay.pk) in by_answer and str(leave.pk) not in by_answer
    assert len(rows(by_answer)) == 1


def test_a_long_question_is_cut_on_one_line():
    assert first_line("  \n" + "x" * 200 + "\nsecond") == "x" * 89 + "…"
    assert first_line("") == ""


@pytest.mark.parametrize(
    ("tool", "state"),
    [
        ({"ok": True, "result": {"status": "success", "message": "Created"}}, "ok"),
        ({"ok": True, "result": {"status": "conflict", "message": "Clashes"}}, "conflict"),
        (
            {"ok": True, "result": {"status": "need_confirmation", "message": "Past"}},
            "need_confirmation",
        ),
        ({"ok": True, "result": {"status": "error", "message": "Bad date"}}, "error"),
        ({"ok": False, "error": {"code": "bad_args", "message": "x"}}, "error"),
        ({"ok": True, "result": "plain text"}, "ok"),
    ],
)
def test_a_tool_calls_state_follows_its_result(tool, state):
    assert call_state(tool)[0] == state


def test_the_trace_shows_a_conflict_and_a_question_not_ok(admin_client, user):
    root = turn(user, make_agent("planner"), "Remind me at 9", status=RunStatus.SUCCEEDED)
    for call_id, status in (("a", "conflict"), ("b", "need_confirmation"), ("c", "success")):
        ChatMessage.objects.create(
            id=uuid.uuid4(),
            session_id=root.session_id,
            role=MessageRole.TOOL,
            run=root,
            tool={
                "call_id": call_id,
                "name": "create_task",
                "arguments": {"title": "call Ana"},
                "ok": True,
                "result": {"status": status, "message": "…", "data": {}},
                "summary": f"Tried to create the task ({call_id})",
            },
        )
    page = admin_client.get(f"{RUNS}{root.pk}/change/").content.decode()
    states = re.findall(r'data-state="([a-z_]+)">([^<]+)</span>', page)
    assert states == [
        ("conflict", "conflict"),
        ("need_confirmation", "needs confirmation"),
        ("ok", "ok"),
    ]
    assert "Tried to create the task (a)" in page  # the call's human summary


def test_the_list_and_the_trace_name_the_agent_in_the_admins_language(admin_client, user):
    finance = make_agent(
        "finance", display_name="Finance expert", display_names={"zh-hans": "财务专家"}
    )
    run = turn(user, finance, "Q3 budget?", status=RunStatus.SUCCEEDED, answer="42")
    chinese = {"HTTP_ACCEPT_LANGUAGE": "zh-TW"}
    listed = admin_client.get(RUNS, **chinese).content.decode()
    assert "財務專家" in listed and "Finance expert" not in listed  # converted from 简体
    trace = admin_client.get(f"{RUNS}{run.pk}/change/", **chinese).content.decode()
    assert "財務專家" in trace
    assert "Finance expert" in admin_client.get(RUNS, HTTP_ACCEPT_LANGUAGE="en").content.decode()

"""Chat tools: search_my_chats sees only the caller's own conversations."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

from django.utils import timezone

from agents.registry import ToolContext, ToolResult, execute, get_tool
from chat.models import ChatMessage, ChatSession, MessageRole
from delegation.runs.create import run_create
from tests.factories import make_agent

_START = timezone.now() - timedelta(days=1)


def _session(user: Any, title: str = "") -> ChatSession:
    return ChatSession.objects.create(id=uuid.uuid4(), user=user, title=title)


def _message(
    session: ChatSession,
    content: str,
    *,
    role: str = MessageRole.USER,
    minute: int = 0,
    run: Any = None,
) -> ChatMessage:
    """A message written `minute` minutes into the test's timeline (explicit, so order is sure)."""
    message = ChatMessage.objects.create(
        id=uuid.uuid4(), session=session, role=role, content=content, run=run
    )
    ChatMessage.objects.filter(pk=message.pk).update(created_at=_START + timedelta(minutes=minute))
    return message


def _search(user: Any, run: Any = None, **arguments: Any) -> ToolResult:
    return execute(
        get_tool("search_my_chats"), ToolContext(user=user, run=run), json.dumps(arguments)
    )


def _texts(result: ToolResult) -> list[str]:
    assert result.ok, result.error
    return [m["text"] for m in result.data["matches"]]


def test_finds_only_the_callers_messages(user, other_user):
    _message(_session(user), "My pineapple pizza order", minute=1)
    _message(_session(other_user), "Mallory's secret pineapple plan", minute=2)

    assert _texts(_search(user, query="pineapple")) == ["My pineapple pizza order"]
    assert _texts(_search(other_user, query="pineapple")) == ["Mallory's secret pineapple plan"]


def test_nothing_found_is_an_empty_list_not_someone_elses(user, other_user):
    _message(_session(other_user), "only mallory talks about kumquats")

    assert _texts(_search(user, query="kumquats")) == []


def test_matches_both_sides_of_the_conversation_ignoring_case(user):
    session = _session(user, "Holiday plans")
    _message(session, "Where should I go in KYOTO?", minute=1)
    _message(session, "Kyoto is lovely in autumn.", role=MessageRole.AGENT, minute=2)
    _message(session, '{"query": "kyoto"}', role=MessageRole.TOOL, minute=3)

    result = _search(user, query="kyoto")

    assert _texts(result) == ["Kyoto is lovely in autumn.", "Where should I go in KYOTO?"]
    assert [m["role"] for m in result.data["matches"]] == ["agent", "user"]
    assert {m["session"] for m in result.data["matches"]} == {"Holiday plans"}


def test_untitled_session_is_named_by_its_id(user):
    session = _session(user)
    _message(session, "a note about turnips")

    match = _search(user, query="turnips").data["matches"][0]

    assert match["session"] == str(session.id)
    assert match["when"] == _START.isoformat(timespec="minutes")


def test_respects_the_limit_newest_first(user):
    session = _session(user)
    for minute in range(8):
        _message(session, f"budget note {minute}", minute=minute)

    assert _texts(_search(user, query="budget", limit=3)) == [
        "budget note 7",
        "budget note 6",
        "budget note 5",
    ]
    assert len(_texts(_search(user, query="budget"))) == 5  # the default


def test_limit_and_query_are_bounded(user):
    assert _search(user, query="budget", limit=21).error_code == "invalid_arguments"
    assert _search(user, query="budget", limit=0).error_code == "invalid_arguments"
    assert _search(user, query="b").error_code == "invalid_arguments"


def test_long_messages_are_shortened(user):
    _message(_session(user), "walrus " + "z" * 1000)

    (text,) = _texts(_search(user, query="walrus"))

    assert text == ("walrus " + "z" * 1000)[:300]


def test_excludes_the_current_runs_question_and_answer(user):
    session = _session(user)
    earlier = _message(session, "Last week: the invoice number is 4471", minute=1)
    question = _message(session, "What was the invoice number?", minute=2)
    run = run_create(
        agent=make_agent(),
        user=user,
        session=session,
        task=question.content,
        transcript=[],
        user_message=question,
    )
    _message(session, "Looking up the invoice…", role=MessageRole.AGENT, minute=3, run=run)

    assert _texts(_search(user, run=run, query="invoice")) == [earlier.content]
    assert len(_texts(_search(user, query="invoice"))) == 3  # without a run, nothing is hidden

"""The snapshot a page rebuilds from: a message saved as streaming after its run ended (a late
start the end did not see, removed or closed by its worker moments later without an event) is
never shown as still streaming."""

from __future__ import annotations

import uuid

import pytest

from chat.models import ChatMessage, ChatSession, MessageRole, MessageStatus
from delegation.models import Run, RunStatus
from delegation.runs.create import run_create
from delegation.selectors import session_snapshot
from tests.factories import make_agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(user):
    agent = make_agent("solo")
    return ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)


def agent_message(run: Run, content: str) -> ChatMessage:
    return ChatMessage.objects.create(
        id=uuid.uuid4(),
        session_id=run.session_id,
        run=run,
        role=MessageRole.AGENT,
        content=content,
        status=MessageStatus.STREAMING,
    )


def shown(session) -> dict[str, str]:
    return {m["content"]: m["status"] for m in session_snapshot(session=session)["messages"]}


def run_of(session, status: str) -> Run:
    run = run_create(
        agent=session.agent, user=session.user, session=session, task="q", transcript=[]
    )
    Run.objects.filter(pk=run.pk).update(status=status)
    return run


def test_a_late_message_of_a_stopped_run_is_closed_or_left_out(session):
    stopped = run_of(session, RunStatus.CANCELLED)
    agent_message(stopped, "")
    agent_message(stopped, "Half an ans")
    assert shown(session) == {"Half an ans": MessageStatus.CANCELLED}


def test_a_late_message_of_a_failed_run_is_shown_failed(session):
    agent_message(run_of(session, RunStatus.TIMED_OUT), "Partial")
    assert shown(session) == {"Partial": MessageStatus.FAILED}


def test_a_message_of_a_run_still_working_streams_on(session):
    agent_message(run_of(session, RunStatus.RUNNING), "")
    agent_message(run_of(session, RunStatus.RUNNING), "So far")
    assert shown(session) == {"": MessageStatus.STREAMING, "So far": MessageStatus.STREAMING}

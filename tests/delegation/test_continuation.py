"""A worker continues the run it just made ready (the expert it asked, the caller the expert's
end resumed) itself, instead of a queue round trip; with no time left it sends it on."""

from __future__ import annotations

import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator

import pytest

from agents import registry
from agents.registry import Tool, ToolContext
from config import enqueue
from config.enqueue import wait_for_in_process_tasks
from delegation.models import Run, RunStatus
from delegation.tasks import advance_run
from delegation.turns import turn_start
from tests.delegation.conftest import make_team
from tests.fake_openai import delegate, text, tool_call

pytestmark = pytest.mark.django_db(transaction=True)


WHERE = "test_where"  # a tool that records the thread it ran on, per run


def fake_team(body: dict) -> object:
    """The lead asks the expert, then calls `test_where`; the expert calls `test_where`; each
    then answers."""
    me = body["messages"][0]["content"]
    last = body["messages"][-1]
    lead = me.startswith("You are lead.")
    if lead and last["role"] == "user":
        return delegate("expert", "look it up")
    if last["role"] == "user" or (lead and "here" not in (last.get("content") or "")):
        return tool_call(WHERE, {})
    return text("The ", "answer.")


@pytest.fixture
def threads() -> Iterator[dict[uuid.UUID, list[str]]]:
    """The threads `test_where` ran on, per run, in order."""
    seen: dict[uuid.UUID, list[str]] = defaultdict(list)

    def where(context: ToolContext, arguments: dict) -> str:
        seen[context.run.id].append(threading.current_thread().name)
        return "here"

    registry.register(Tool(WHERE, "Where am I?", {"type": "object"}, where))
    yield seen
    registry._TOOLS.pop(WHERE, None)


def a_turn_on_this_thread(user) -> Run:
    """Start a lead → expert turn and run its task body here, as a worker would; the root run,
    after the pool has run whatever was sent to it."""
    first = []
    with pytest.MonkeyPatch.context() as patch:  # the turn's first task: not sent, run below
        patch.setattr(enqueue, "_publish", lambda task, args: first.append(args))
        sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="go")
    assert first == [(str(sent.run.id),)]
    advance_run.run(*first[0])
    wait_for_in_process_tasks()
    sent.run.refresh_from_db()
    assert sent.run.status == RunStatus.SUCCEEDED, sent.run.error
    assert Run.objects.get(parent=sent.run).status == RunStatus.SUCCEEDED
    return sent.run


@pytest.fixture
def lead(fake_openai, settings):
    settings.TASKS_RUN_SYNC = False  # the in-process pool, as `make run` serves
    fake_openai.fallback = fake_team
    team = make_team(lead=["expert"], expert=[])
    for agent in team.values():
        agent.tool_keys = [WHERE]
        agent.save()
    return team["lead"]


def test_the_expert_and_the_resumed_caller_run_in_the_callers_task(lead, user, threads):
    root = a_turn_on_this_thread(user)
    expert = Run.objects.get(parent=root)
    here = threading.current_thread().name
    assert threads[expert.id] == [here]  # asked by the lead's task: run by it, not the pool
    assert threads[root.id] == [here]  # resumed by the expert's end: run by the same task


def test_with_no_time_left_the_ready_run_is_sent_to_another_worker(lead, user, threads, settings):
    settings.CELERY_TASK_SOFT_TIME_LIMIT = 0  # no model call fits in this task any more
    root = a_turn_on_this_thread(user)
    expert = Run.objects.get(parent=root)
    here = threading.current_thread().name
    assert len(threads[expert.id]) == 1 and threads[expert.id] != [here]
    assert len(threads[root.id]) == 1 and threads[root.id] != [here]

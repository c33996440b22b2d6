"""A2A tasks over our models: a task is the entry agent's run of one of the caller's turns."""

from __future__ import annotations

import uuid
from typing import Any

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types.a2a_pb2 import (
    Artifact,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from channels.db import database_sync_to_async

from chat.models import ChatSession
from delegation.humans.decisions import items_close_stopped
from delegation.models import Run, RunStatus
from delegation.turns import turn_stop

# A context id that is not one of the caller's sessions names this user's session uuid5(…).
CONTEXT_SESSIONS = uuid.UUID("6f1d6c9e-2b8a-4a57-9d0e-a2a0c0a7e5b1")
ANSWER_ARTIFACT = "answer"  # the entry agent's answer: one artifact per task
STATES = {
    RunStatus.QUEUED: TaskState.TASK_STATE_SUBMITTED,
    RunStatus.RUNNING: TaskState.TASK_STATE_WORKING,
    RunStatus.WAITING: TaskState.TASK_STATE_WORKING,
    RunStatus.WAITING_HUMAN: TaskState.TASK_STATE_INPUT_REQUIRED,
    RunStatus.SUCCEEDED: TaskState.TASK_STATE_COMPLETED,
    RunStatus.FAILED: TaskState.TASK_STATE_FAILED,
    RunStatus.TIMED_OUT: TaskState.TASK_STATE_FAILED,
    RunStatus.CANCELLED: TaskState.TASK_STATE_CANCELED,
}
SETTLED = {  # from these on, the runs are the truth: no live copy is kept
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
    TaskState.TASK_STATE_INPUT_REQUIRED,
    TaskState.TASK_STATE_AUTH_REQUIRED,
}


class PlatformUser(User):
    """The platform user an API token authenticated, as the SDK's call context carries it."""

    def __init__(self, account: Any) -> None:
        self.account = account

    @property
    def is_authenticated(self) -> bool:
        """Always: unauthenticated calls are refused before the SDK sees them."""
        return True

    @property
    def user_name(self) -> str:
        """The platform username."""
        return str(self.account.get_username())


def caller_of(context: ServerCallContext) -> Any:
    """The platform user of a call (the ASGI door authenticated every call it lets through)."""
    assert isinstance(context.user, PlatformUser)  # (set by the door's context builder)
    return context.user.account


def session_for_context(*, user: Any, context_id: str | None) -> uuid.UUID:
    """The session a context continues: none, a new one; one of the user's own sessions,
    that one; any other name, this user's session named by it (never another user's)."""
    if not context_id:
        return uuid.uuid4()
    try:
        session_id = uuid.UUID(context_id)
    except ValueError:
        session_id = None
    if session_id and ChatSession.objects.filter(pk=session_id, user=user).exists():
        return session_id
    return uuid.uuid5(CONTEXT_SESSIONS, f"{user.pk}/{context_id}")


def task_from_run(run: Run) -> Task:
    """The task a root run is: its state, the user's message, the answer as an artifact."""
    state = STATES.get(RunStatus(run.status), TaskState.TASK_STATE_WORKING)
    status = TaskStatus(state=state)
    status.timestamp.FromDatetime(run.finished_at or run.started_at or run.created_at)
    if run.error and state == TaskState.TASK_STATE_FAILED:
        note = Part(text=str(run.error.get("message") or ""))
        status.message.CopyFrom(_message(run, Role.ROLE_AGENT, note, "error"))
    task = Task(id=str(run.id), context_id=str(run.session_id), status=status)
    if run.user_message is not None:
        asked = Part(text=run.user_message.content)
        task.history.append(_message(run, Role.ROLE_USER, asked, str(run.user_message.pk)))
    if run.answer:
        task.artifacts.append(
            Artifact(artifact_id=ANSWER_ARTIFACT, name="answer", parts=[Part(text=run.answer)])
        )
    return task


def _message(run: Run, role: Role, part: Part, message_id: str) -> Message:
    return Message(
        message_id=message_id,
        context_id=str(run.session_id),
        task_id=str(run.id),
        role=role,
        parts=[part],
    )


def _own_root_runs(user: Any) -> Any:
    return Run.objects.filter(user=user, parent__isnull=True).select_related("user_message")


def task_of(*, user: Any, task_id: str) -> Task | None:
    """The user's task `task_id` as our runs show it, or None (someone else's, or none)."""
    run = _own_root_runs(user).filter(pk=_uuid_or_none(task_id)).first()
    return task_from_run(run) if run else None


def task_cancel(*, user: Any, task_id: str) -> bool:
    """Stop the user's turn `task_id` as the page's stop does; False if not theirs or ended."""
    run = _own_root_runs(user).filter(pk=_uuid_or_none(task_id)).first()
    if run is None:
        return False
    stopped = turn_stop(run=run)
    items_close_stopped(run=run)  # its questions and approvals stop waiting
    return stopped


class RunTaskStore(TaskStore):
    """Tasks read from the caller's runs (so they survive restarts and stay per user). While
    this process streams a task, the SDK's own copy (artifacts as they came) is served; a
    CANCELED task saved by the SDK stops the turn."""

    def __init__(self) -> None:
        self.live: dict[str, Task] = {}  # task id -> the SDK's copy until the task settles

    def follow(self, task: Task) -> None:
        """Serve this copy of a task just started here until the SDK settles it."""
        self.live[task.id] = _copy(task)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Keep the SDK's copy while the task is live; a cancellation stops the turn."""
        if task.status.state == TaskState.TASK_STATE_CANCELED:
            await database_sync_to_async(task_cancel)(user=caller_of(context), task_id=task.id)
        if task.id not in self.live:
            return
        if task.status.state in SETTLED:
            self.live.pop(task.id, None)
        else:
            self.live[task.id] = _copy(task)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The caller's task (None for anyone else's): the live copy, else from the runs."""
        stored = await database_sync_to_async(task_of)(user=caller_of(context), task_id=task_id)
        if stored is None:
            return None
        live = self.live.get(task_id)
        return _copy(live) if live is not None else stored

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The caller's newest tasks, of one context if asked (a single page)."""

        def newest() -> list[Task]:
            runs = _own_root_runs(caller_of(context)).order_by("-created_at")
            if params.context_id:
                runs = runs.filter(session_id=_uuid_or_none(params.context_id))
            return [task_from_run(run) for run in runs[: params.page_size or 50]]

        tasks = await database_sync_to_async(newest)()
        return ListTasksResponse(tasks=tasks, page_size=len(tasks), total_size=len(tasks))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Nothing: a turn stays in the user's chat (they delete chats on the page)."""


def _copy(task: Task) -> Task:
    copied = Task()
    copied.CopyFrom(task)
    return copied


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None

"""Preview turns: an agent form's unsaved values answer a message in a sandbox user's session,
as an eval's draft run does; the live agent and real users' inboxes are never touched."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from agents.models import Agent
from chat.models import ChatSession
from config.errors import AppError
from delegation.evals.overrides import config_from_snapshot, root_run_pin
from delegation.evals.sandbox import is_sandbox_user, sandbox_acquire, sandbox_extend
from delegation.models import Run
from delegation.turns import turn_start

PREVIEW_SECONDS = 15 * 60  # a preview's sandbox (and so its trace) is kept at least this long
PREVIEW_TITLE = "Preview of "  # the title of a preview session: "Preview of <agent name>"


def preview_start(
    *, agent: Agent, snapshot: dict[str, Any], message: str, session_id: str, language: str
) -> Run:
    """Start a preview turn of `snapshot` (the agent's unsaved definition) answering `message`;
    with the id of an earlier preview session, as its next turn. AppError when the live agent
    cannot take a turn."""
    config = config_from_snapshot(agent=agent, snapshot={**snapshot, "name": agent.name})
    session = _preview_session(agent, session_id)
    with transaction.atomic():
        sent = turn_start(
            user=session.user,
            session_id=session.id,
            message_id=uuid.uuid4(),
            text=message,
            language=language,
        )
        if sent.run is None or sent.run.agent_id != agent.pk:
            raise AppError(
                "invalid", _("The live agent is disabled or closed: enable it to preview.")
            )
        root_run_pin(run=sent.run, overrides={"agents": {agent.name: config}}, model="")
    return sent.run


def preview_run(*, run_id: uuid.UUID) -> Run | None:
    """The preview turn with this id, or None when it is not one (a real user's run is never
    shown through a preview's door)."""
    run = (
        Run.objects.filter(pk=run_id, parent__isnull=True).select_related("user", "session").first()
    )
    if run is None or not is_sandbox_user(run.user) or not _is_preview(run.session):
        return None
    return run


def _preview_session(agent: Agent, session_id: str) -> ChatSession:
    """The preview conversation to continue (its sandbox lease renewed), else a new one in a
    freshly leased sandbox user who may use the agent."""
    try:
        session = (
            ChatSession.objects.select_related("user")
            .filter(pk=uuid.UUID(session_id), agent=agent)
            .first()
        )
    except ValueError:
        session = None
    if session is not None and is_sandbox_user(session.user) and _is_preview(session):
        sandbox_extend(user=session.user, seconds=PREVIEW_SECONDS)
        return session
    profile: dict[str, Any] = {
        "groups": [agent.access_group.name] if agent.access_group is not None else [],
        "permissions": [agent.access_permission] if agent.access_permission else [],
    }
    user = sandbox_acquire(seconds=PREVIEW_SECONDS, profile=profile)
    return ChatSession.objects.create(
        id=uuid.uuid4(), user=user, agent=agent, title=f"{PREVIEW_TITLE}{agent.name}"[:200]
    )


def _is_preview(session: ChatSession | None) -> bool:
    return session is not None and session.title.startswith(PREVIEW_TITLE)

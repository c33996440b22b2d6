"""Staff-only JSON views of the agent form: the provider's model list, and the preview chat
that runs the form's unsaved values as a sandboxed turn (as an eval's draft run does)."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.utils.translation import gettext as _

from agents.models import Agent
from agents.providers.base import ProviderError
from agents.providers.catalog import provider_model_names
from agents.services import agent_snapshot, unix_newlines, validation_errors_by_field
from chat.models import ChatSession
from config.errors import AppError
from delegation.evals.overrides import config_from_snapshot, root_run_pin
from delegation.evals.sandbox import is_sandbox_user, sandbox_acquire, sandbox_extend
from delegation.models import Run
from delegation.turns import turn_start

PREVIEW_SECONDS = 15 * 60  # a preview's sandbox (and so its trace) is kept at least this long
PREVIEW_TITLE = "Preview of "  # the title of a preview session: "Preview of <agent name>"


def models_json(request: HttpRequest) -> JsonResponse:
    """GET ?provider=…: the model names the provider offers; `error` when they cannot be had."""
    provider = request.GET.get("provider") or "default"
    try:
        return JsonResponse({"models": provider_model_names(provider), "error": ""})
    except ProviderError:
        return JsonResponse({"models": [], "error": _("Couldn't load models.")})


def preview_start_json(request: HttpRequest, agent: Agent, form: Any) -> JsonResponse:
    """POST: the bound agent form (its unsaved values) answers `preview_message` in a sandboxed
    turn; with `preview_session`, as the next turn of that preview conversation."""
    message = str(request.POST.get("preview_message", "")).strip()
    if not message:
        return _problem(_("Write a message to send to the draft."))
    if not form.is_valid():
        problems = validation_errors_by_field(ValidationError(form.errors.as_data()))
        return _problem(_("Fix the form's errors first."), fields=problems)
    snapshot = {
        k: unix_newlines(v)
        for k, v in agent_snapshot(
            agent=form.instance, subagents=form.cleaned_data.get("allowed_subagents")
        ).items()
    }
    snapshot["name"] = agent.name  # the preview runs as this agent, even if the form renames it
    config = config_from_snapshot(agent=agent, snapshot=snapshot)
    session = _preview_session(agent, str(request.POST.get("preview_session", "")))
    try:
        with transaction.atomic():
            sent = turn_start(
                user=session.user,
                session_id=session.id,
                message_id=uuid.uuid4(),
                text=message,
                language=getattr(request, "LANGUAGE_CODE", ""),
            )
            if sent.run is None or sent.run.agent_id != agent.pk:
                raise AppError(
                    "invalid", _("The live agent is disabled or closed: enable it to preview.")
                )
            root_run_pin(run=sent.run, overrides={"agents": {agent.name: config}}, model="")
    except AppError as exc:
        return _problem(exc.message, status=exc.status)
    return JsonResponse(
        {
            "run_id": str(sent.run.pk),
            "session_id": str(session.pk),
            "status_url": reverse("admin:agents_agent_preview_status", args=[sent.run.pk]),
            "trace_url": reverse("admin:delegation_run_change", args=[sent.run.pk]),
        }
    )


def preview_status_json(request: HttpRequest, run_id: uuid.UUID) -> JsonResponse:
    """GET: how a preview turn is going: its status, and once it ends its answer or error."""
    run = (
        Run.objects.filter(pk=run_id, parent__isnull=True).select_related("user", "session").first()
    )
    if run is None or not is_sandbox_user(run.user) or not _is_preview(run.session):
        return _problem(_("No such preview."), status=404)
    return JsonResponse(
        {
            "status": run.status,
            "status_label": run.get_status_display(),
            "final": run.is_final,
            "answer": run.answer if run.is_final else "",
            "error": (run.error or {}).get("message", "") if run.is_final else "",
            "trace_url": reverse("admin:delegation_run_change", args=[run.pk]),
        }
    )


def _preview_session(agent: Agent, session_id: str) -> ChatSession:
    """The preview conversation to continue (its sandbox lease renewed), else a new one in a
    freshly leased sandbox user who may use the agent."""
    try:
        found = ChatSession.objects.select_related("user").filter(
            pk=uuid.UUID(session_id), agent=agent
        )
        session = found.first()
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


def _problem(message: str, *, status: int = 400, fields: Any = None) -> JsonResponse:
    return JsonResponse({"error": message, "fields": fields or {}}, status=status)

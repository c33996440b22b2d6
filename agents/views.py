"""Staff-only JSON views of the agent form: the provider's model list, and the preview chat
that runs the form's unsaved values as a sandboxed turn (as an eval's draft run does)."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import ValidationError
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.utils.translation import gettext as _

from agents.models import Agent
from agents.providers.base import ProviderError
from agents.providers.catalog import provider_model_names
from agents.services import agent_snapshot, unix_newlines, validation_errors_by_field
from config.errors import AppError
from delegation.evals.preview import preview_run, preview_start


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
    try:
        run = preview_start(
            agent=agent,
            snapshot=snapshot,  # runs as this agent, even if the form renames it
            message=message,
            session_id=str(request.POST.get("preview_session", "")),
            language=getattr(request, "LANGUAGE_CODE", ""),
        )
    except AppError as exc:
        return _problem(exc.message, status=exc.status)
    return JsonResponse(
        {
            "run_id": str(run.pk),
            "session_id": str(run.session_id),
            "status_url": reverse("admin:agents_agent_preview_status", args=[run.pk]),
            "trace_url": reverse("admin:delegation_run_change", args=[run.pk]),
        }
    )


def preview_status_json(request: HttpRequest, run_id: uuid.UUID) -> JsonResponse:
    """GET: how a preview turn is going: its status, and once it ends its answer or error."""
    run = preview_run(run_id=run_id)
    if run is None:
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


def _problem(message: str, *, status: int = 400, fields: Any = None) -> JsonResponse:
    return JsonResponse({"error": message, "fields": fields or {}}, status=status)

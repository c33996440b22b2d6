"""Rules an agent definition must satisfy, shared by admin forms and the API."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError

from agents.providers.a2a_provider import QUESTION_TOOLS as REMOTE_QUESTION_TOOLS
from agents.registry import key_problems, unknown_keys


def agent_validate(
    *,
    agent_pk: int | None,
    tool_keys: list[str],
    allowed_subagent_pks: list[int],
    provider: str,
    model: str,
    access_permission: str,
    base_url: str = "",
    is_entry: bool,
    enabled: bool,
    stored_tool_keys: list[str] | None = None,
) -> None:
    """Raise ValidationError (keyed by field) for a definition that cannot run as configured.

    A key the code no longer registers may stay where it is already stored (`stored_tool_keys`):
    it is skipped at run time and shown as stale, so it must not block unrelated edits.
    """
    errors: dict[str, list[str]] = {}
    kept = set(stored_tool_keys or [])
    problems = {k: why for k, why in key_problems(tool_keys).items() if k not in kept}
    unknown = [key for key, why in problems.items() if why == "unknown"]
    if unknown:
        errors.setdefault("tool_keys", []).append(
            f"Unknown tool key(s): {', '.join(unknown)}. Only tools registered in code or "
            "synced from an MCP server may be used."
        )
    for key, why in problems.items():
        if why != "unknown":
            errors.setdefault("tool_keys", []).append(f"{key} cannot be used now: {why}.")
    if len(set(tool_keys)) != len(tool_keys):
        errors.setdefault("tool_keys", []).append("A tool key is listed twice.")
    if agent_pk is not None and agent_pk in allowed_subagent_pks:
        errors.setdefault("allowed_subagents", []).append("An agent cannot delegate to itself.")
    if provider == "openai" and not (model or settings.OPENAI_MODEL):
        errors.setdefault("model", []).append("Name a model (or set OPENAI_MODEL).")
    if provider == "a2a" and not base_url:
        errors.setdefault("base_url", []).append(
            "A remote agent (A2A) needs the base URL its agent card is served under."
        )
    own_tools = [k for k in tool_keys if k not in REMOTE_QUESTION_TOOLS]
    if provider == "a2a" and own_tools:
        errors.setdefault("tool_keys", []).append(
            f"A remote agent (A2A) uses its own tools, not {', '.join(own_tools)}: list only "
            "ask_user or ask_human, which ask its questions of the user or of staff."
        )
    if access_permission and not _permission_exists(access_permission):
        errors.setdefault("access_permission", []).append(
            f"No permission {access_permission!r}; "
            "use app_label.codename, e.g. chat.view_chatsession."
        )
    if is_entry and not enabled:
        errors.setdefault("enabled", []).append("The entry agent must be enabled.")
    if errors:
        raise ValidationError(errors)


def stale_tool_keys(tool_keys: list[str]) -> list[str]:
    """Stored tool keys that no code registers any more (removed from the code)."""
    return unknown_keys(list(tool_keys or []))


def _permission_exists(dotted: str) -> bool:
    app_label, _, codename = dotted.partition(".")
    return (
        bool(codename)
        and Permission.objects.filter(content_type__app_label=app_label, codename=codename).exists()
    )


def tags_from_text(text: str) -> list[str]:
    """Comma-separated tags as a clean, de-duplicated list."""
    seen: dict[str, None] = {}
    for part in text.split(","):
        tag = part.strip()
        if tag:
            seen.setdefault(tag, None)
    return list(seen)


def tags_to_text(tags: Any) -> str:
    """A tag list as the comma-separated text admins edit."""
    return ", ".join(tags or [])

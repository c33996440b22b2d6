"""What people read of a tool call: one sentence in their language and script, never the
model's JSON nor a tool's internal name (the raw arguments and result stay beside it)."""

from __future__ import annotations

import logging
from typing import Any

from django.utils import translation
from django.utils.translation import gettext as _

from agents.registry import Tool
from config.text import in_script

logger = logging.getLogger(__name__)

# Errors that speak to the model about its own call, not to people about the world.
MODEL_ERRORS = frozenset({"invalid_json", "invalid_arguments", "unknown_tool"})


def tool_label(registered: Tool | None, name: str) -> str:
    """The tool's human name (its key humanised when the registry no longer has it)."""
    if registered is not None:
        return registered.label
    return name.rsplit(".", 1)[-1].replace("_", " ").capitalize()


def call_running(registered: Tool | None, name: str) -> str:
    """The sentence of a call still running: "Search documents…"."""
    return in_turn_script(_("%(tool)s…") % {"tool": tool_label(registered, name)})


def call_summary(
    registered: Tool | None, name: str, arguments: Any, outcome: dict[str, Any]
) -> str:
    """The sentence of a finished call (`outcome`: as the tool message shows it, `ok` with
    `result` or `error`): the tool's own `summarize`, else the result's `message`, else its
    title and "done" or the failure's plain words."""
    label = tool_label(registered, name)
    if not outcome.get("ok"):
        error = outcome.get("error") or {}
        if error.get("code") in MODEL_ERRORS or not error.get("message"):
            return in_turn_script(
                _("%(tool)s: not done (the request could not be used).") % {"tool": label}
            )
        return in_turn_script(
            _("%(tool)s: failed. %(problem)s") % {"tool": label, "problem": error["message"]}
        )
    result = None if outcome.get("truncated") else outcome.get("result")
    said = ""
    if registered is not None and registered.summarize is not None and isinstance(arguments, dict):
        try:
            said = registered.summarize(arguments, result)
        except Exception:  # a label never breaks a call
            logger.exception("summarize of tool %s failed", registered.key)
    if not said and isinstance(result, dict) and isinstance(result.get("message"), str):
        said = result["message"]
    return in_turn_script(said or _("%(tool)s: done.") % {"tool": label})


def in_turn_script(text: str) -> str:
    """`text` in the script of the active language (a Traditional turn reads Traditional)."""
    return in_script(text, translation.get_language() or "")

"""What people read of asking an expert: one sentence in the turn's language and script."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _

from agents.names import text_in
from config.text import in_script
from delegation.models import Run


def spoken(run: Run) -> AbstractContextManager[None]:
    """The language of `run`'s turn made active (code that runs outside its step: an expert's
    end reported by a sweeper, a stop)."""
    return translation.override(run.language or settings.LANGUAGE_CODE)


def expert_name(config: dict[str, Any], language: str | None = None) -> str:
    """The name people read of the agent a run pinned (`run.agent_config`), in `language`
    (default: the active one); runs pinned before names per language show the display name."""
    return text_in(config.get("display_names"), config["display_name"], language or None)


def asking(expert: str) -> str:
    """An expert at work: "Asking Finance expert…"."""
    return _scripted(_("Asking %(expert)s…") % {"expert": expert})


def refused(expert: str | None) -> str:
    """An expert that could not be asked (why is the call's error, shown beside it)."""
    if not expert:
        return _scripted(_("Could not ask an expert"))
    return _scripted(_("Could not ask %(expert)s") % {"expert": expert})


def ended(expert: str, status: str) -> str:
    """How an expert's work ended, in a few words (what went wrong is the call's error)."""
    words = {
        "succeeded": _("%(expert)s answered"),
        "invalid": _("%(expert)s's answer could not be verified; asking again"),
        "cancelled": _("%(expert)s was stopped"),
        "timed_out": _("%(expert)s did not answer in time"),
        "refused": _("Could not ask %(expert)s"),
    }
    return _scripted(words.get(status, _("%(expert)s could not answer")) % {"expert": expert})


def _scripted(text: str) -> str:
    return in_script(text, translation.get_language() or "")

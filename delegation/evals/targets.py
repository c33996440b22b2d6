"""What an eval run ran against, in words: kept in English with the run, shown in the reader's
language ("current versions, the offline model" → 「目前版本，離線模型」)."""

from __future__ import annotations

import re

from django.utils.translation import gettext, gettext_noop

OFFLINE = "offline"  # the model name that runs every agent on the built-in offline model
CURRENT = gettext_noop("current versions")
OWN_MODEL = gettext_noop("each agent's own model")
OFFLINE_MODEL = gettext_noop("the offline model")
_DRAFT = re.compile(r"^draft of (?P<agent>.+) \(edited from v(?P<version>\d+)\)$")
_MODEL = re.compile(r"^model (?P<model>.+)$")
_LEARNING = re.compile(r"^(?P<what>.+), routing learning (?P<learning>off|advisory|on)$")


def model_label(model: str) -> str:
    """How a model override reads in a run's target (English, as kept)."""
    if not model:
        return OWN_MODEL
    return OFFLINE_MODEL if model == OFFLINE else f"model {model}"


def draft_target(agent: str, version: int) -> str:
    """The target of a publish gate's runs on a draft (English, as kept)."""
    return f"draft of {agent} (edited from v{version})"


def target_text(target: str) -> str:
    """A kept target in the active language; parts that are not ours stay as they are."""
    what, sep, model = target.rpartition(", ")
    if not sep:
        what, model = target, ""
    if not model:
        return _what(what)
    return gettext("%(what)s, %(model)s") % {"what": _what(what), "model": _model(model)}


def learning_target(what: str, learning: str) -> str:
    """A target whose turns are routed with `learning` (English, as kept)."""
    return f"{what}, routing learning {learning}"


def _what(text: str) -> str:
    if found := _LEARNING.match(text):
        return gettext("%(what)s, routing learning %(learning)s") % {
            "what": _what(found["what"]),
            "learning": found["learning"],
        }
    if text == CURRENT:
        return gettext(CURRENT)
    if found := _DRAFT.match(text):
        return gettext("draft of %(agent)s (edited from v%(version)s)") % found.groupdict()
    return text


def _model(text: str) -> str:
    if text in (OWN_MODEL, OFFLINE_MODEL):
        return gettext(text)
    if found := _MODEL.match(text):
        return gettext("model %(model)s") % found.groupdict()
    return text

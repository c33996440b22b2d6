"""The one result shape every planner tool returns: status, a plain message, and data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from agents.tool_questions import ASK, UserQuestion
from config.text import sentences

STATUSES = ("success", "conflict", "need_confirmation", "error")


@dataclass(frozen=True)
class Outcome:
    """What a planner service did: `success`, `conflict` (nothing done; data shows what
    clashes), `need_confirmation` (nothing done; ask the user, or choose a candidate) or
    `error` (nothing done; the message says why). `message` is read by people as it is (the
    call's summary): it never tells the model what to do. `ask`: a question the engine puts
    to the user (buttons) before calling the tool again with the answer."""

    status: str
    message: str
    data: dict[str, Any] = field(default_factory=dict)
    ask: UserQuestion | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown outcome status {self.status!r}")

    def as_result(self) -> dict[str, Any]:
        """The tool result the model reads."""
        result = {"status": self.status, "message": self.message, "data": self.data}
        return result | ({ASK: self.ask.as_data()} if self.ask is not None else {})


def success(message: str, **data: Any) -> Outcome:
    """It was done."""
    return Outcome("success", message, data)


def conflict(message: str, *, ask: UserQuestion | None = None, **data: Any) -> Outcome:
    """Not done: it clashes with something the data lists."""
    return Outcome("conflict", message, data, ask)


def need_confirmation(message: str, *, ask: UserQuestion | None = None, **data: Any) -> Outcome:
    """Not done: the user must confirm or choose first."""
    return Outcome("need_confirmation", message, data, ask)


def save_anyway(reason: str) -> UserQuestion:
    """The user's choice, after `reason` why something was not saved: save it anyway (the
    call runs again with `confirm: true`) or not."""
    accept = _("Save it anyway")
    return UserQuestion(
        sentences(reason, _("Save it anyway?")), [accept, _("Don't save")], accept=accept
    )


def error(message: str, **data: Any) -> Outcome:
    """Not done, and why."""
    return Outcome("error", message, data)

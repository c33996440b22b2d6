"""The one result shape every planner tool returns: status, a plain message, and data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STATUSES = ("success", "conflict", "need_confirmation", "error")


@dataclass(frozen=True)
class Outcome:
    """What a planner service did: `success`, `conflict` (nothing done; data shows what
    clashes), `need_confirmation` (nothing done; ask the user, or choose a candidate) or
    `error` (nothing done; the message says why)."""

    status: str
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown outcome status {self.status!r}")

    def as_result(self) -> dict[str, Any]:
        """The tool result the model reads."""
        return {"status": self.status, "message": self.message, "data": self.data}


def success(message: str, **data: Any) -> Outcome:
    """It was done."""
    return Outcome("success", message, data)


def conflict(message: str, **data: Any) -> Outcome:
    """Not done: it clashes with something the data lists."""
    return Outcome("conflict", message, data)


def need_confirmation(message: str, **data: Any) -> Outcome:
    """Not done: the user must confirm or choose first."""
    return Outcome("need_confirmation", message, data)


def error(message: str, **data: Any) -> Outcome:
    """Not done, and why."""
    return Outcome("error", message, data)

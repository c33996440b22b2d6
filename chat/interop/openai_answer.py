"""A turn's events read as an OpenAI chat completion: the entry agent's text, usage, the end."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from django.utils.translation import gettext as _

TOKEN_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens")


@dataclass
class Answer:
    """The entry agent's answer as the events bring it (`take` each one), in pieces of text
    to send on; experts' work is not mixed into it. Usage sums every run of the turn."""

    text: str = ""
    status: str = ""  # the entry agent's run's end: succeeded, failed, cancelled, timed_out
    error: dict[str, Any] | None = None
    waiting_for: str = ""  # a person the turn now waits for (run.waiting)
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_FIELDS, 0))
    cost: Decimal = Decimal(0)
    currency: str = ""
    _sent: dict[str, int] = field(default_factory=dict)  # message id -> characters taken

    def take(self, event: dict[str, Any]) -> str:
        """Take one event; the text it adds to the answer ("" for none)."""
        kind, data = event.get("type"), event.get("data") or {}
        if kind == "run.completed":
            self._count(data.get("usage") or {})
        if kind == "run.waiting":
            self.waiting_for = data.get("waiting_for") or _("a staff member")
            return self._add("waiting", _wait_note(self.waiting_for), whole=True)
        if (event.get("agent") or {}).get("depth") != 0:
            return ""
        if kind == "run.completed":
            self.status, self.error = data.get("status", ""), data.get("error")
            if self.status != "succeeded" and not self.text and self.error:
                return self._add("error", self.error.get("message", ""), whole=True)
            return ""
        message = str(event.get("message_id") or "")
        if kind == "message.delta":
            return self._add(message, data.get("text", ""), offset=data.get("offset", 0))
        if kind == "message.completed":
            return self._add(message, data.get("text", ""), whole=True)
        return ""

    @property
    def finished(self) -> bool:
        """Whether the turn's answer ended (or waits for a person)."""
        return bool(self.status or self.waiting_for)

    def usage_body(self) -> dict[str, Any]:
        """OpenAI's `usage` object, with the turn's cost beside it where priced."""
        body: dict[str, Any] = {
            "prompt_tokens": self.usage["prompt_tokens"],
            "completion_tokens": self.usage["completion_tokens"],
            "total_tokens": self.usage["total_tokens"]
            or self.usage["prompt_tokens"] + self.usage["completion_tokens"],
            "prompt_tokens_details": {"cached_tokens": self.usage["cached_tokens"]},
        }
        if self.currency:
            body["x_cost"] = {"amount": f"{self.cost:f}", "currency": self.currency}
        return body

    def _add(self, message: str, text: str, *, offset: int = 0, whole: bool = False) -> str:
        """The part of a message's text not taken yet; a new message is set apart by a blank
        line. A final text that is not a continuation of what went out adds nothing."""
        taken = self._sent.get(message)
        if taken is None:
            taken = self._sent[message] = 0
            separator = "\n\n" if self.text else ""
        else:
            separator = ""
        if whole:
            offset = 0
        if offset > taken or offset + len(text) <= taken:
            return ""
        piece = separator + text[taken - offset :]
        self._sent[message] = offset + len(text)
        self.text += piece
        return piece

    def _count(self, usage: dict[str, Any]) -> None:
        for name in TOKEN_FIELDS:
            value = usage.get(name)
            if isinstance(value, int):
                self.usage[name] += value
        with contextlib.suppress(InvalidOperation):
            self.cost += Decimal(str(usage.get("cost") or 0))
        self.currency = self.currency or usage.get("currency") or ""


def _wait_note(who: str) -> str:
    return _(
        "Waiting for %(who)s to decide; the answer will follow in this conversation on the "
        "platform's chat page."
    ) % {"who": who}

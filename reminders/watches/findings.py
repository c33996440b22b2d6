"""A watch's finding: what a check asks the expert to answer (one JSON object), reading and
validating that answer, and the offline model's deterministic finding from its tool results."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _

from config.text import simplified
from reminders.watches.models import Severity

# The line a check ends with; the offline model knows a check by it (in any language).
MARKER = "WATCH-FINDING-JSON"
_FORMAT = (
    "\n\n[{marker}] Answer with one JSON object and nothing else: "
    '{{"found": true or false, "title": "...", "detail": "...", '
    '"severity": "info" | "warning" | "critical", "key": "a stable id of what you found"}}.'
)
_OBJECT = re.compile(r"\{.*\}", re.S)
_DAYS = re.compile(
    r"(?:more than|over|at least|>)\s*(\d{1,4})\s*days?"
    r"|(?:超過|超过|逾期)\s*(\d{1,4})\s*天|(\d{1,4})\s*天以上",
    re.I,
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ID_FIELDS = ("number", "title", "name", "key", "id")


@dataclass(frozen=True)
class Finding:
    """What a check found (validated)."""

    found: bool
    title: str = ""
    detail: str = ""
    severity: str = Severity.INFO
    key: str = ""

    def as_data(self) -> dict[str, Any]:
        """The finding as stored and sent."""
        return asdict(self)

    @property
    def digest(self) -> str:
        """What makes two findings the same finding told again: its key and its content."""
        said = json.dumps([self.key, self.title, self.detail, self.severity], ensure_ascii=False)
        return hashlib.sha256(said.encode()).hexdigest()


def check_text(prompt: str) -> str:
    """The message a check sends the expert: the admin's check and the answer's format."""
    return prompt.strip() + _FORMAT.format(marker=MARKER)


def finding_parse(answer: str) -> Finding:
    """The finding in the expert's answer; ValueError with a plain reason when it is not one."""
    match = _OBJECT.search(answer or "")
    if match is None:
        raise ValueError(_("The answer holds no JSON object."))
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise ValueError(
            _("The answer's JSON is malformed: %(problem)s") % {"problem": exc}
        ) from exc
    if not isinstance(data, dict) or not isinstance(data.get("found"), bool):
        raise ValueError(_("The finding must say “found”: true or false."))
    if not data["found"]:
        return Finding(found=False)
    fields = {name: data.get(name) for name in ("title", "detail", "severity", "key")}
    if not isinstance(fields["title"], str) or not fields["title"].strip():
        raise ValueError(_("A finding needs a title."))
    if fields["severity"] not in Severity.values:
        raise ValueError(
            _("Severity must be info, warning or critical, not %(value)s.")
            % {"value": json.dumps(fields["severity"])}
        )
    detail = fields["detail"] if isinstance(fields["detail"], str) else ""
    key = fields["key"] if isinstance(fields["key"], str) and fields["key"].strip() else ""
    title = fields["title"].strip()[:200]
    return Finding(True, title, detail[:4000], str(fields["severity"]), (key or title)[:200])


def offline_finding(messages: list[dict[str, Any]]) -> str | None:
    """The offline model's answer to a check once its tools answered (None: not a check): the
    items the tools listed, those dated more than N days ago when the check says so, as a
    finding whose key names them (the same items, the same key)."""
    asked = next((m for m in reversed(messages) if m["role"] == "user"), None)
    text = str((asked or {}).get("content") or "")
    if MARKER not in text:
        return None
    days = _days(text)
    items = [item for body in _tool_bodies(messages) for item in _items(body)]
    if days is not None:
        before = timezone.localdate() - timedelta(days=days)
        items = [item for item in items if _dated_before(item, before)]
    if not items:
        return json.dumps({"found": False})
    names = sorted({_ident(item) for item in items})
    finding = {
        "found": True,
        "title": _("%(count)s found: %(names)s") % {"count": len(names), "names": ", ".join(names)},
        "detail": "\n".join(_line(item) for item in items),
        "severity": Severity.WARNING,
        "key": hashlib.sha1("|".join(names).encode()).hexdigest()[:16],
    }
    return json.dumps(finding, ensure_ascii=False)


def _days(text: str) -> int | None:
    match = _DAYS.search(simplified(text))
    return int(next(g for g in match.groups() if g)) if match else None


def _tool_bodies(messages: list[dict[str, Any]]) -> list[Any]:
    """The results of the tools called since the check was asked."""
    since = max(i for i, m in enumerate(messages) if m["role"] == "user")
    bodies = []
    for message in messages[since:]:
        if message["role"] != "tool":
            continue
        try:
            body = json.loads(message.get("content") or "")
        except (TypeError, json.JSONDecodeError):
            continue
        if isinstance(body, dict) and body.get("ok", True):
            bodies.append(body.get("result", body))
    return bodies


def _items(value: Any) -> list[dict[str, Any]]:
    """The records (dicts in lists) anywhere in a tool's result."""
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            return value
        return [item for v in value for item in _items(v)]
    if isinstance(value, dict):
        return [item for v in value.values() for item in _items(v)]
    return []


def _dated_before(item: dict[str, Any], before: date) -> bool:
    dates = [date.fromisoformat(v) for v in item.values() if isinstance(v, str) and _DATE.match(v)]
    return bool(dates) and min(dates) < before


def _ident(item: dict[str, Any]) -> str:
    return next(
        (str(item[k]) for k in _ID_FIELDS if item.get(k) not in (None, "")),
        json.dumps(item, sort_keys=True)[:60],
    )


def _line(item: dict[str, Any]) -> str:
    return " · ".join(str(v) for v in item.values() if isinstance(v, str | int | float) and v)

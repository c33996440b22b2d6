"""Session memory: what routing remembers between turns, written by mode, bounded in size."""

from __future__ import annotations

from typing import Any

from django.db.models.constants import OnConflict
from django.utils.translation import gettext_lazy as _

from agents.models import Agent
from config.db.prepared import PreparedInsert, PreparedSave
from config.text import in_script
from delegation.models import Run
from delegation.routing.models import Mode, RoutingPolicy, SessionMemory
from delegation.routing.selectors import memory_of

MAX_TOPICS = 10
MAX_DOCS = 20
MAX_TEXT = 100

# What a remembered mode means to the person reading their memory.
MODE_WORDS = {
    Mode.GUIDE: _("Being shown around"),
    Mode.CHAT: _("A question to talk through"),
    Mode.STRICT: _("Strict answers from documents, with sources"),
}


def memory_context(*, run: Run, policy: RoutingPolicy | None) -> dict[str, Any]:
    """What routing remembers of the conversation, for the entry agent ({} when nothing). It
    quotes users and documents (topics, document titles): data for the model, never part of a
    system prompt (delegation/steps/prompting.py)."""
    memory = memory_of(
        session=run.session_id, user=run.user_id, per_user=bool(policy and policy.memory_per_user)
    )
    data = memory.data if memory else {}
    remembered = {
        "last_intent": data.get("last_intent"),
        "topics_of_interest": data.get("interested_topics"),
        "documents_already_cited": [d["title"] for d in data.get("visited_docs", [])],
        "last_project_in_focus": data.get("last_project_focus"),
    }
    return {key: value for key, value in remembered.items() if value}


# A first memory, unless another turn of the user wrote it first (no savepoint needed around
# it): compiled once per connection.
_FIRST = PreparedInsert(SessionMemory, on_conflict=OnConflict.IGNORE)
_SAVE = PreparedSave(SessionMemory, "data", "updated_at")


def memory_after_turn(*, run: Run, policy: RoutingPolicy | None) -> None:
    """Update memory after a successful turn, as its mode allows: GUIDE and CHAT record intent,
    topics and the documents cited; STRICT only routing preferences (the intent)."""
    routing = run.routing or {}
    mode = routing.get("mode")
    if not mode:
        return
    per_user = bool(policy and policy.memory_per_user)
    owner = {"user_id": run.user_id, "session_id": None if per_user else run.session_id}
    memory = memory_of(session=run.session_id, user=run.user_id, per_user=per_user)
    if memory is None:  # a first memory is written with its data in one statement
        first = _FIRST.insert(SessionMemory(**owner, data=_remembered({}, run, mode)))
        if first.pk is not None:
            return
        memory = SessionMemory.objects.get(**owner)  # another turn of the user wrote it first
    memory.data = _remembered(dict(memory.data), run, mode)
    _SAVE.save(memory)


def _remembered(data: dict[str, Any], run: Run, mode: str) -> dict[str, Any]:
    """`data` with what this turn adds to it."""
    routing = run.routing or {}
    if routing.get("matched_rule"):
        data["last_intent"] = str(routing["matched_rule"])[:MAX_TEXT]
        data["last_mode"] = mode
        if routing.get("target"):
            data["last_expert"] = str(routing["target"])[:MAX_TEXT]
        else:
            data.pop("last_expert", None)
    if mode != Mode.STRICT:
        topics = [*data.get("interested_topics", []), *routing.get("matched_keywords", [])]
        data["interested_topics"] = _recent_unique([t[:MAX_TEXT] for t in topics], MAX_TOPICS)
        docs = [*data.get("visited_docs", [])]
        for citation in run.citations or []:
            if citation.get("document_id") is None:  # a web page: not a document to revisit
                continue
            docs.append(
                {"document_id": citation["document_id"], "title": citation["title"][:MAX_TEXT]}
            )
        data["visited_docs"] = _recent_unique(docs, MAX_DOCS, key=lambda d: d["document_id"])
        if "project" in str(routing.get("matched_rule") or "") and routing.get("matched_keywords"):
            data["last_project_focus"] = ", ".join(routing["matched_keywords"])[:MAX_TEXT]
    return data


def memory_shown(*, data: dict[str, Any], language: str) -> dict[str, Any]:
    """Memory as its owner reads it in `language`: the last kind of question in words (the
    expert's name there, else the mode's meaning; never a rule's or agent's identifier), topics
    in the language's script, the documents cited."""
    return {
        "last_intent": _intent_words(data, language),
        "interested_topics": [in_script(t, language) for t in data.get("interested_topics", [])],
        "visited_docs": data.get("visited_docs", []),
        "last_project_focus": (
            in_script(data["last_project_focus"], language)
            if data.get("last_project_focus")
            else None
        ),
    }


def _intent_words(data: dict[str, Any], language: str) -> str | None:
    """The expert the last question went to, in `language`, else its mode in words. A memory
    written before experts were recorded names rules only: an agent among them is the expert."""
    names = [data["last_expert"]] if data.get("last_expert") else []
    if not names and data.get("last_intent"):
        names = [part.strip() for part in str(data["last_intent"]).split("+")]
    expert = Agent.objects.filter(name__in=names).first() if names else None
    if expert is not None:
        return expert.name_in(language)
    words = MODE_WORDS.get(data.get("last_mode", ""))
    return str(words) if words else None


def memory_clear(*, session: Any, user: Any) -> None:
    """Forget what routing remembered of this session (and of the user, if kept per user)."""
    SessionMemory.objects.filter(user=user, session=session).delete()
    SessionMemory.objects.filter(user=user, session__isnull=True).delete()


def _recent_unique(items: list[Any], limit: int, key: Any = None) -> list[Any]:
    """The last `limit` distinct items, oldest first (a newer repeat moves to the end)."""
    key = key or (lambda item: item)
    seen: dict[Any, Any] = {}
    for item in items:
        seen.pop(key(item), None)
        seen[key(item)] = item
    return list(seen.values())[-limit:]

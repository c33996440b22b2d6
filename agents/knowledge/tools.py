"""The kb_search and kb_documents tools: an agent's knowledge, as the end user may read it."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils.translation import get_language, gettext_lazy, ngettext
from django.utils.translation import gettext as _

from agents.knowledge.retrieval import passages_search
from agents.knowledge.selectors import (
    agent_has_knowledge,
    documents_current,
    knowledge_bases_for,
    knowledge_bases_linked_to,
)
from agents.registry import ToolContext, ToolError, tool
from config.errors import AppError
from config.text import joined

KNOWLEDGE_TOOL_KEYS = ["kb_documents", "kb_search"]


def knowledge_tool_keys_for(agent: Any) -> list[str]:
    """The kb tool keys to offer an agent: both when a knowledge base is linked, else none."""
    return (
        list(KNOWLEDGE_TOOL_KEYS) if agent is not None and agent_has_knowledge(agent=agent) else []
    )


def _agent_keys(context: ToolContext) -> list[str | int]:
    """Who is asking: the run's pinned agent name, else the context's agent."""
    config = getattr(context.run, "agent_config", None) or {}
    keys: list[str | int] = [config["name"]] if config.get("name") else []
    if not keys and context.agent is not None:
        keys = [context.agent.pk] if isinstance(context.agent.pk, int) else [context.agent.name]
    return keys


def _readable_kbs(context: ToolContext) -> tuple[list, str]:
    """The knowledge bases to use, or none with a sentence saying why."""
    keys = _agent_keys(context)
    kbs = knowledge_bases_for(agent_names_or_ids=keys, user=context.user)
    if kbs:
        return kbs, ""
    if knowledge_bases_linked_to(agent_names_or_ids=keys).exists():
        return [], _("The user may not read this agent's knowledge bases, so nothing was searched.")
    return [], _("This agent has no knowledge base, so there is nothing to search.")


def _where(result: Any) -> str:
    """The knowledge bases a result searched, by the names people know them by."""
    names = result.get("searched") if isinstance(result, dict) else None
    return joined(names) if names else _("the knowledge base")


def _searched(arguments: dict[str, Any], result: Any) -> str:
    """ "Searched Finance documents: 3 passages" (no passage: the result's own sentence)."""
    count = len(result.get("passages") or []) if isinstance(result, dict) else 0
    if not count and isinstance(result, dict) and result.get("message"):
        return str(result["message"])
    words = ngettext(
        "Searched %(where)s: %(count)s passage", "Searched %(where)s: %(count)s passages", count
    )
    return words % {"where": _where(result), "count": count}


def _listed(arguments: dict[str, Any], result: Any) -> str:
    """ "Listed the documents of Finance documents: 4"."""
    count = len(result.get("documents") or []) if isinstance(result, dict) else 0
    if not count and isinstance(result, dict) and result.get("message"):
        return str(result["message"])
    words = ngettext(
        "Listed %(count)s document of %(where)s", "Listed %(count)s documents of %(where)s", count
    )
    return words % {"where": _where(result), "count": count}


def _shown_names(kbs: list) -> list[str]:
    """How people know these knowledge bases: their names in the active language (the turn's)."""
    return [kb.name_in(get_language()) for kb in kbs]


@tool(
    "kb_search",
    "Search the agent's knowledge bases (Chinese or English) and return the best passages with "
    "their document, version, section and score. Cite the passages you use.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for, in the user's words."},
            "top_k": {
                "type": "integer",
                "minimum": 1,
                "maximum": settings.KNOWLEDGE_MAX_TOP_K,
                "default": 5,
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    title=gettext_lazy("Search documents"),
    summarize=_searched,
)
def kb_search(context: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Passages of the readable knowledge bases that best match the query."""
    kbs, why = _readable_kbs(context)
    if not kbs:
        return {"passages": [], "knowledge_bases": [], "message": why}
    try:
        passages = passages_search(
            kb_ids=[kb.pk for kb in kbs], query=args["query"], top_k=args.get("top_k", 5)
        )
    except AppError as exc:
        raise ToolError(exc.message) from exc
    result: dict[str, Any] = {
        "passages": [p.as_dict() for p in passages],
        "knowledge_bases": [kb.name for kb in kbs],
        "searched": _shown_names(kbs),
    }
    if not passages:
        result["message"] = _("No passage matches the query in %(kbs)s.") % {
            "kbs": joined(result["searched"], get_language())
        }
    return result


@tool(
    "kb_documents",
    "List the documents in the agent's knowledge bases (current versions): newest effective "
    "date first (for 'the latest file'), or by title; optionally only titles containing a word.",
    {
        "type": "object",
        "properties": {
            "sort": {"type": "string", "enum": ["newest", "title"], "default": "newest"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
            "query": {"type": "string", "maxLength": 200, "default": ""},
        },
        "additionalProperties": False,
    },
    title=gettext_lazy("List documents"),
    summarize=_listed,
)
def kb_documents(context: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """The current documents of the readable knowledge bases, with title, version and date."""
    kbs, why = _readable_kbs(context)
    if not kbs:
        return {"documents": [], "knowledge_bases": [], "message": why}
    documents = documents_current(
        kb_ids=[kb.pk for kb in kbs],
        sort=args.get("sort", "newest"),
        limit=args.get("limit", 10),
        query=args.get("query", ""),
    )
    result: dict[str, Any] = {
        "documents": [
            {
                "document_id": d.pk,
                "title": d.title,
                "version": d.version,
                "effective_date": d.effective_date.isoformat(),
                "source": d.source,
                "kb": d.kb.name,
                "kb_name": d.kb.name_in(get_language()),
            }
            for d in documents
        ],
        "knowledge_bases": [kb.name for kb in kbs],
        "searched": _shown_names(kbs),
    }
    if not documents:
        result["message"] = _("No indexed document matches in %(kbs)s.") % {
            "kbs": joined(result["searched"], get_language())
        }
    return result

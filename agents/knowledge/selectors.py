"""Reads of knowledge: which knowledge bases a user may read through an agent, and documents."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet

from agents.knowledge.models import Document, DocumentStatus, KnowledgeBase
from agents.knowledge.text import normalize
from config.errors import NotFound

# Columns a listing never needs (the original bytes and the extracted text are large).
HEAVY_FIELDS = ("original", "text")


def kb_readable_by(*, kb: KnowledgeBase, user: Any, group_ids: set[int] | None = None) -> bool:
    """Whether the end user passes the knowledge base's access rule (group and/or permission);
    `group_ids`: the user's groups, when the caller read them once for many bases."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.is_superuser:
        return True
    if kb.access_group_id:
        in_group = (
            kb.access_group_id in group_ids
            if group_ids is not None
            else user.groups.filter(pk=kb.access_group_id).exists()
        )
        if not in_group:
            return False
    return not kb.access_permission or user.has_perm(kb.access_permission)


def knowledge_bases_unreadable_by(*, user: Any) -> list[int]:
    """Ids of the knowledge bases whose access rule the user does not pass (of those with a
    rule: one without is readable by every signed-in user); two queries however many."""
    restricted = KnowledgeBase.objects.exclude(access_group=None, access_permission="")
    group_ids = set(user.groups.values_list("pk", flat=True)) if user.is_authenticated else set()
    return [kb.pk for kb in restricted if not kb_readable_by(kb=kb, user=user, group_ids=group_ids)]


def knowledge_bases_of_documents(*, document_ids: Iterable[int]) -> list[int]:
    """Ids of the knowledge bases these documents belong to."""
    kbs = Document.objects.filter(pk__in=list(document_ids)).values_list("kb_id", flat=True)
    return sorted(set(kbs))


def knowledge_bases_linked_to(
    *, agent_names_or_ids: Iterable[str | int]
) -> QuerySet[KnowledgeBase]:
    """Knowledge bases linked to any of these agents (by name or id), whoever reads."""
    values = list(agent_names_or_ids)
    names = [v for v in values if isinstance(v, str)]
    ids = [v for v in values if isinstance(v, int)]
    return (
        KnowledgeBase.objects.filter(Q(agents__name__in=names) | Q(agents__id__in=ids))
        .select_related("access_group")
        .distinct()
        .order_by("name")
    )


def knowledge_bases_for(
    *, agent_names_or_ids: Iterable[str | int], user: Any
) -> list[KnowledgeBase]:
    """Knowledge bases linked to any of these agents AND readable by the end user: the only
    door to knowledge for tools, so a user never sees passages of a base they may not read."""
    linked = knowledge_bases_linked_to(agent_names_or_ids=agent_names_or_ids)
    return [kb for kb in linked if kb_readable_by(kb=kb, user=user)]


def agent_has_knowledge(*, agent: Any) -> bool:
    """Whether any knowledge base is linked to the agent (whoever the user is); read with the
    agent when it was loaded `with_knowledge_flag`."""
    linked = getattr(agent, "linked_knowledge", None)
    if linked is not None:
        return linked
    return KnowledgeBase.objects.filter(agents=agent).exists()


def with_knowledge_flag(agents: QuerySet[Any]) -> QuerySet[Any]:
    """Agents loaded with whether a knowledge base is linked to each, in the same statement."""
    return agents.annotate(
        linked_knowledge=Exists(KnowledgeBase.objects.filter(agents=OuterRef("pk")))
    )


def manages_knowledge(user: Any) -> bool:
    """Whether the user holds any permission of the knowledge app (the admin shows it them);
    each REST view checks the one its method needs."""
    return bool(getattr(user, "is_authenticated", False) and user.has_module_perms("knowledge"))


def access_knowledge_base(user: Any, kb_id: int) -> KnowledgeBase:
    """A knowledge base for a REST caller who manages knowledge, or NotFound."""
    kb = KnowledgeBase.objects.filter(pk=kb_id).first()
    if kb is None or not manages_knowledge(user):
        raise NotFound("knowledge_base")
    return kb


def access_document(user: Any, kb: KnowledgeBase, document_id: int) -> Document:
    """A document of this knowledge base for a REST caller who manages knowledge, or NotFound."""
    document = Document.objects.defer(*HEAVY_FIELDS).filter(kb=kb, pk=document_id).first()
    if document is None or not manages_knowledge(user):
        raise NotFound("document")
    return document


def documents_of(*, kb: KnowledgeBase, include_superseded: bool = True) -> QuerySet[Document]:
    """A knowledge base's documents, newest effective date first."""
    documents = Document.objects.filter(kb=kb).defer(*HEAVY_FIELDS)
    return documents if include_superseded else documents.filter(superseded=False)


def documents_current(
    *, kb_ids: list[int], sort: str = "newest", limit: int = 10, query: str = ""
) -> list[Document]:
    """Current (not superseded) indexed documents of these knowledge bases: newest effective
    date first, or by title; `query` keeps those whose title or source contains it."""
    documents = (
        Document.objects.filter(kb_id__in=kb_ids, superseded=False, status=DocumentStatus.INDEXED)
        .select_related("kb")
        .defer(*HEAVY_FIELDS)
    )
    order = ["title", "-version"] if sort == "title" else ["-effective_date", "-created_at", "-id"]
    documents = documents.order_by(*order)
    if not query.strip():
        return list(documents[:limit])
    wanted = normalize(query.strip())  # so a 简体 query finds a 繁體 title
    matching = (d for d in documents if wanted in normalize(f"{d.title} {d.source}"))
    return list(islice(matching, limit))


def document_with_hash(*, kb: KnowledgeBase, content_hash: str) -> Document | None:
    """The document of this knowledge base with exactly these bytes, if any."""
    return (
        Document.objects.filter(kb=kb, content_hash=content_hash)
        .only("id", "title", "version")
        .first()
    )

"""A knowledge base searched as one user would search it through kb_search: their access first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from agents.knowledge.models import KnowledgeBase
from agents.knowledge.retrieval import Passage, passages_search
from agents.knowledge.selectors import kb_readable_by


@dataclass(frozen=True)
class SearchAs:
    """The passages a user would get, or none and why (they may not read the base)."""

    readable: bool
    passages: list[Passage] = field(default_factory=list)
    message: str = ""


def passages_search_as(*, kb: KnowledgeBase, user: Any, query: str, top_k: int = 5) -> SearchAs:
    """Passages of `kb` for `query` as `user` gets them (kb_search's access rule, then its
    retrieval); AppError for an empty or too long query, as the tool refuses it."""
    if not kb_readable_by(kb=kb, user=user):
        return SearchAs(readable=False, message=_refusal(kb, user))
    passages = passages_search(kb_ids=[kb.pk], query=query, top_k=top_k)
    message = "" if passages else _("No passage matches the query.")
    return SearchAs(readable=True, passages=passages, message=message)


def _refusal(kb: KnowledgeBase, user: Any) -> str:
    """Why this user gets nothing from this knowledge base."""
    values = {"user": user.get_username(), "knowledge_base": kb.name_in()}
    if not user.is_active:
        return _("%(user)s is not an active account, so nothing is searched.") % values
    if kb.access_group is not None:
        values["group"] = kb.access_group.name
        if not user.groups.filter(pk=kb.access_group.pk).exists():
            return (
                _(
                    "%(user)s may not read %(knowledge_base)s (only members of the group "
                    "%(group)s may), so their searches find nothing in it."
                )
                % values
            )
    values["permission"] = kb.access_permission
    return (
        _(
            "%(user)s may not read %(knowledge_base)s (it needs the permission %(permission)s), "
            "so their searches find nothing in it."
        )
        % values
    )

"""Reads of humans-in-the-loop data, scoped to who asks: inbox items, reviews, what waits."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _

from agents.knowledge.selectors import knowledge_bases_unreadable_by
from agents.registry import get_tool
from agents.tool_labels import tool_label
from config.errors import NotFound
from config.permissions import holds_model_permission
from delegation.humans.models import Activity, Audience, InboxItem, ItemKind, Review


def group_names(user: Any) -> list[str]:
    """The names of the auth groups the user is in."""
    return list(user.groups.values_list("name", flat=True))


def _staff_scope(user: Any) -> Q:
    """What a staff member may see: everything for superusers, else unassigned or their groups'."""
    if user.is_superuser:
        return Q()
    return Q(group="") | Q(group__in=group_names(user))


def eval_items_q() -> Q:
    """Items of eval turns: their runs act for a sandbox user (`EVALS_SANDBOX_PREFIX`; the
    eval run decides them by its case, staff never see them)."""
    return Q(user__username__startswith=settings.EVALS_SANDBOX_PREFIX)


def is_eval_item(item: InboxItem) -> bool:
    """Whether the item belongs to an eval turn (see eval_items_q)."""
    return str(item.user.get_username()).startswith(settings.EVALS_SANDBOX_PREFIX)


def inbox_items_for(*, user: Any) -> QuerySet[InboxItem]:
    """Items the user may see: staff see the inbox (their groups' items, never an eval
    turn's), and everyone sees the items of the runs that act for them (their questions;
    their requests awaiting approval, which only staff may decide, and which they may
    cancel)."""
    visible = Q(user=user)
    if user.is_staff:
        visible |= Q(audience=Audience.STAFF) & _staff_scope(user) & ~eval_items_q()
    return InboxItem.objects.filter(visible).select_related("user", "decided_by", "run")


def may_decide(user: Any, item: InboxItem) -> bool:
    """Questions to the user are theirs to answer; everything else is for staff in scope."""
    if item.audience == Audience.USER:
        return item.user_id == user.pk
    if not user.is_staff:
        return False
    return user.is_superuser or not item.group or item.group in group_names(user)


def access_inbox_item(user: Any, item_id: uuid.UUID | str) -> InboxItem:
    """An item the user may see, or NotFound (another's is answered exactly like a missing one)."""
    item = inbox_items_for(user=user).filter(pk=item_id).first()
    if item is None:
        raise NotFound("inbox_item")
    return item


def reviews_for(*, user: Any) -> QuerySet[Review]:
    """Reviews a reviewer (who may view reviews) may see: their groups', or unassigned; none
    for others."""
    if not holds_model_permission(user, Review, "view"):
        return Review.objects.none()
    return Review.objects.filter(_staff_scope(user)).select_related("reviewed_by", "user", "run")


def access_review(user: Any, review_id: uuid.UUID | str) -> Review:
    """A review the user may see, or NotFound."""
    review = reviews_for(user=user).filter(pk=review_id).first()
    if review is None:
        raise NotFound("review")
    return review


def activity_for(*, user: Any) -> QuerySet[Activity]:
    """Activity rows a staff member who may view the log sees, as the inbox, the reviews and
    the knowledge would show them: rows of their groups' agents (or unassigned; all for
    superusers), never another user's question to themselves, and only rows whose knowledge
    they may read. Their own runs' rows are theirs, as in the inbox."""
    if not holds_model_permission(user, Activity, "view"):
        return Activity.objects.none()
    visible = Q(user=user) | (Q(audience=Audience.STAFF) & _staff_scope(user))
    rows = Activity.objects.filter(visible)
    unreadable = knowledge_bases_unreadable_by(user=user)
    if unreadable:
        rows = rows.exclude(knowledge__in=unreadable)
    return rows.select_related("user", "actor")


def waiting_for(item: InboxItem) -> str:
    """Who the run waits for, as the page says it ("Waiting for approval from …")."""
    if item.audience == Audience.USER:
        return "you"
    return f"the {item.group} team" if item.group else "a staff member"


def waiting_for_shown(item: InboxItem) -> str:
    """Who the run waits for, in the active language, as people read it."""
    if item.audience == Audience.USER:
        return _("you")
    if item.group:
        return _("the %(group)s team") % {"group": item.group}
    return _("a staff member")


def item_tool_label(item: InboxItem) -> str:
    """The gated tool's human name in the active language ("" for a question)."""
    return tool_label(get_tool(item.tool), item.tool) if item.tool else ""


def human_info(item: InboxItem) -> dict[str, Any]:
    """What a tool message and its events say about the person the call waits for."""
    decided_by = item.decided_by
    return {
        "item_id": str(item.id),
        "kind": item.kind,
        "audience": item.audience,
        "status": item.status,
        "question": item.question,
        "options": item.options,
        "urgency": item.urgency,
        "waiting_for": waiting_for_shown(item),
        "tool_label": item_tool_label(item),
        "deadline": item.deadline.isoformat(),
        "decided_by": _who(decided_by) if decided_by else None,
        "answer": item.answer if item.kind == ItemKind.QUESTION else "",
        "note": item.note,
    }


def item_as_data(item: InboxItem) -> dict[str, Any]:
    """An inbox item as the REST API and the `inbox.*` events show it."""
    return {
        "id": str(item.id),
        "kind": item.kind,
        "audience": item.audience,
        "question": item.question,
        "options": item.options,
        "urgency": item.urgency,
        "tool": item.tool or None,
        "tool_label": item_tool_label(item) or None,
        "arguments": item.arguments,
        "final_arguments": item.final_arguments,
        "run_id": str(item.run_id),
        "agent": {
            "name": item.agent_name,
            "display_name": item.agent_display_name,
            "path": item.path,
        },
        "on_behalf_of": item.user.get_username(),
        "on_behalf_of_name": _who(item.user),
        "group": item.group or None,
        "created_at": item.created_at.isoformat(),
        "deadline": item.deadline.isoformat(),
        "status": item.status,
        "decision": item.decision or None,
        "answer": item.answer,
        "note": item.note,
        "decided_by": _who(item.decided_by) if item.decided_by_id else None,
        "decided_at": item.decided_at.isoformat() if item.decided_at else None,
        "executed": item.executed_at is not None,
    }


def _who(user: Any) -> str:
    return user.get_full_name() or user.get_username()

"""Reads of watches: the watches a user is watched by (with their mute state and next run)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q
from django.utils.translation import gettext as _

from config.errors import AppError
from reminders.watches.models import Watch, WatchState
from reminders.watches.schedule import watch_next_run, watch_words


@dataclass(frozen=True)
class UserWatch:
    """A watch as its user sees it."""

    id: int
    name: str
    expert: str
    check: str
    schedule: str
    next_run_at: datetime | None
    enabled: bool
    muted: bool


def _watching(user: Any) -> Any:
    return (
        Watch.objects.filter(Q(users=user) | Q(groups__in=user.groups.all()))
        .distinct()
        .select_related("agent")
        .order_by("name")
    )


def watches_of(*, user: Any, now: datetime) -> list[UserWatch]:
    """The watches that check for this user (directly or through a group), as they see them."""
    watches = list(_watching(user))
    muted = set(
        WatchState.objects.filter(user=user, muted=True, watch__in=watches).values_list(
            "watch_id", flat=True
        )
    )
    return [_seen(watch, watch.pk in muted, now) for watch in watches]


def access_watch(user: Any, watch_id: int) -> Watch:
    """A watch that checks for this user; another's is answered exactly like a missing one."""
    watch = _watching(user).filter(pk=watch_id).first()
    if watch is None:
        raise AppError("not_found", _("No such watch."), status=404)
    return watch


def watch_seen(*, watch: Watch, user: Any, now: datetime) -> UserWatch:
    """One watch as this user sees it."""
    muted = WatchState.objects.filter(watch=watch, user=user, muted=True).exists()
    return _seen(watch, muted, now)


def _seen(watch: Watch, muted: bool, now: datetime) -> UserWatch:
    return UserWatch(
        id=watch.pk,
        name=watch.name,
        expert=watch.agent.name_in(),  # in the active language, as the chat names experts
        check=watch.prompt,
        schedule=watch_words(watch),
        next_run_at=watch_next_run(watch, now),
        enabled=watch.enabled,
        muted=muted,
    )

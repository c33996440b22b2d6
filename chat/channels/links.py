"""Linking a channel account to a platform user: by its owner on the page, or by an admin."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.channels.configured import line_configured, slack_configured
from chat.channels.models import ChannelLink, LinkCode
from config.errors import AppError


def link_code_usable(*, code: str) -> LinkCode:
    """The code if it is unused and in time, else NotFound (all alike: nothing to learn)."""
    found = LinkCode.objects.filter(code=code, used_at=None, expires_at__gt=timezone.now()).first()
    if found is None:
        raise AppError(
            "not_found",
            _("This link has expired or was used. Write to the bot again for a new one."),
            status=404,
        )
    return found


@transaction.atomic
def link_confirm(*, user: Any, code: str) -> ChannelLink:
    """Link the code's channel account to `user` (who is signed in); the code is used up."""
    found = link_code_usable(code=code)
    LinkCode.objects.filter(pk=found.pk).update(used_at=timezone.now())
    return link_create(
        user=user, channel=found.channel, external_id=found.external_id, linked_by=user
    )


def link_create(*, user: Any, channel: str, external_id: str, linked_by: Any) -> ChannelLink:
    """A link of the account to `user`; an account linked to someone already is refused."""
    existing = ChannelLink.objects.filter(channel=channel, external_id=external_id).first()
    if existing is not None:
        if existing.user_id == user.pk:
            return existing
        raise AppError("conflict", _("This account is already linked to another user."))
    try:
        with transaction.atomic():
            return ChannelLink.objects.create(
                user=user, channel=channel, external_id=external_id, linked_by=linked_by
            )
    except IntegrityError as exc:
        raise AppError("conflict", _("This account is already linked to another user.")) from exc


def link_remove(*, user: Any, link_id: int) -> None:
    """Remove one of the user's own links (another user's is not found)."""
    deleted, _rows = ChannelLink.objects.filter(pk=link_id, user=user).delete()
    if not deleted:
        raise AppError("not_found", _("No such link."), status=404)


def link_set_reminders(*, user: Any, link_id: int, on: bool) -> None:
    """Whether one of the user's links gets their reminders (another user's is not found)."""
    if not ChannelLink.objects.filter(pk=link_id, user=user).update(reminders=on):
        raise AppError("not_found", _("No such link."), status=404)


def links_offered() -> bool:
    """Whether the page links to the linked accounts: a channel is switched on."""
    return line_configured() or slack_configured()

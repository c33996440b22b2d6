"""Sandbox users: who eval turns run as. Each case leases one, with the case's groups,
permissions and timezone; everything the turn wrote as that user (sessions, runs, messages,
tasks, reminders, memory…) is deleted before and after the case, so side-effect tools act for
real inside the case (a task created, then its reminder scheduled) and never outlive it.

Sandbox usernames start with EVALS_SANDBOX_PREFIX ("eval~" by default: Django's username
rules refuse "~", so no real account can have one); that prefix is how reports and listings
tell eval activity apart. They have no password and no email, so no one signs in as them and
no reminder mail can go out."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import models, transaction
from django.db.models import Q
from django.db.models.deletion import ProtectedError, RestrictedError
from django.utils import timezone

from chat.models import ChatPreference
from delegation.evals.expectations import permission_of
from delegation.evals.models import EvalSandbox

logger = logging.getLogger(__name__)


def sandbox_prefix() -> str:
    """The username prefix of every sandbox user."""
    return settings.EVALS_SANDBOX_PREFIX


def is_sandbox_user(user: Any) -> bool:
    """Whether the user is an eval sandbox user."""
    return bool(user) and str(user.get_username()).startswith(sandbox_prefix())


def sandbox_users_q(field: str = "user") -> Q:
    """A filter matching rows that belong to sandbox users, e.g. `qs.exclude(sandbox_users_q())`
    (`field` names the user relation: "user", "session__user", …; "" for users themselves)."""
    return Q(
        **{f"{field}__username__startswith" if field else "username__startswith": sandbox_prefix()}
    )


def sandbox_acquire(*, seconds: float, profile: dict[str, Any]) -> Any:
    """Lease a free sandbox user (or make one) for `seconds`, wiped and given the case's
    profile: {"groups": [names], "permissions": ["app.codename"], "timezone": "…"}."""
    now = timezone.now()
    with transaction.atomic():
        sandbox = (
            EvalSandbox.objects.select_for_update(skip_locked=True)
            .filter(Q(leased_until__isnull=True) | Q(leased_until__lt=now))
            .select_related("user")
            .order_by("pk")
            .first()
        )
        if sandbox is None:
            user = get_user_model().objects.create(
                username=f"{sandbox_prefix()}{uuid.uuid4().hex[:12]}",
                first_name="Eval sandbox",
            )
            user.set_unusable_password()
            user.save(update_fields=["password"])
            sandbox = EvalSandbox.objects.create(user=user)
        sandbox.leased_until = now + timedelta(seconds=seconds)
        sandbox.save(update_fields=["leased_until"])
    user = sandbox.user
    sandbox_wipe(user=user)
    _configure(user, profile)
    return user


def sandbox_extend(*, user: Any, seconds: float) -> None:
    """Keep the lease while the case is still running."""
    EvalSandbox.objects.filter(user=user).update(
        leased_until=timezone.now() + timedelta(seconds=seconds)
    )


def sandbox_release(*, user: Any) -> None:
    """Wipe what the case did and give the sandbox back."""
    sandbox_wipe(user=user)
    user.groups.clear()
    user.user_permissions.clear()
    EvalSandbox.objects.filter(user=user).update(leased_until=None)


def _configure(user: Any, profile: dict[str, Any]) -> None:
    user.groups.set(Group.objects.filter(name__in=profile.get("groups", [])))
    user.user_permissions.set(
        [p for p in (permission_of(n) for n in profile.get("permissions", [])) if p is not None]
    )
    if profile.get("timezone"):
        ChatPreference.objects.create(user=user, timezone=profile["timezone"])
    for cache in ("_perm_cache", "_user_perm_cache", "_group_perm_cache"):
        user.__dict__.pop(cache, None)


def sandbox_wipe(*, user: Any) -> None:
    """Delete every row that belongs to the user and would go with the account (its
    cascades), keeping the account itself and the usage ledger (money really spent)."""
    relations = [
        r
        for r in user._meta.related_objects
        if not r.many_to_many
        and r.related_model is not EvalSandbox
        and getattr(r, "on_delete", None) is models.CASCADE
    ]
    for relation in relations:
        rows = relation.related_model._base_manager.filter(**{relation.field.name: user})
        try:
            with transaction.atomic():
                rows.delete()
        except (ProtectedError, RestrictedError) as exc:
            logger.warning("sandbox %s: %s rows kept: %s", user, relation.related_model, exc)

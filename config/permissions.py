"""Django's model permissions over REST: a staff endpoint asks what the admin asks.

A view names the model whose permission applies (`permission_model`); the request's method
names the action: GET, HEAD and OPTIONS view, POST add, PUT and PATCH change, DELETE delete.
`permission_actions` names another action for a method (a POST that acts on a row that exists
asks `change`, or whatever the admin asks for that button). As in the admin, whoever may change
rows may also view them, and an active superuser holds every permission.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Model
from rest_framework.permissions import SAFE_METHODS, DjangoModelPermissions
from rest_framework.request import Request

VIEW = "%(app_label)s.view_%(model_name)s"


def model_permission(model: type[Model], action: str) -> str:
    """The permission `app_label.<action>_<model_name>` (action: view, add, change, delete)."""
    return f"{model._meta.app_label}.{action}_{model._meta.model_name}"


def is_staff_member(user: Any) -> bool:
    """Whether the admin lets the user in at all: active staff (superusers are let in only as
    staff too). A permission held by anyone else, through a group, grants nothing here."""
    return bool(getattr(user, "is_authenticated", False) and user.is_active and user.is_staff)


def holds_model_permission(user: Any, model: type[Model], action: str) -> bool:
    """Whether the user may `action` rows of `model` as the admin decides it: active staff
    holding the permission (view: view or change)."""
    if not is_staff_member(user):
        return False
    if user.has_perm(model_permission(model, action)):
        return True
    return action == "view" and user.has_perm(model_permission(model, "change"))


class ModelPermissions(DjangoModelPermissions):
    """The permission on the view's `permission_model` that the request's method asks for;
    reads ask `view`, unlike DRF's default (which lets anyone authenticated read)."""

    perms_map = {
        **DjangoModelPermissions.perms_map,
        "GET": [VIEW],
        "HEAD": [VIEW],
        "OPTIONS": [VIEW],
    }

    def has_permission(self, request: Request, view: Any) -> bool:
        """Whether the signed-in user holds the permission this request needs."""
        user = request.user
        if not (user and user.is_authenticated):
            return False
        model, method = view_model(view), request.method or ""
        action = getattr(view, "permission_actions", {}).get(method)
        if action is not None:
            return holds_model_permission(user, model, action)
        needed = self.get_required_permissions(method, model)  # 405 for other methods
        if not needed:  # (ModelWritePermissions' reads: every signed-in user)
            return True
        if method in SAFE_METHODS:
            return holds_model_permission(user, model, "view")
        return is_staff_member(user) and user.has_perms(needed)


class ModelWritePermissions(ModelPermissions):
    """Writes ask the model permission, reads only a signed-in user: for an endpoint that
    serves everyone and decides inside what staff (who may view the model) see."""

    perms_map = DjangoModelPermissions.perms_map


def view_model(view: Any) -> type[Model]:
    """The model whose permissions guard `view`."""
    model = getattr(view, "permission_model", None)
    assert model is not None, f"{type(view).__name__} names no permission_model"
    return model

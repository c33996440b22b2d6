"""Checks of the free text a human sends with a decision or a review (answers, notes)."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from config.errors import AppError


def input_text(value: Any, *, field: str, limit: int) -> str:
    """The text sent as `field` ("" for none); AppError `invalid` when it is not a string,
    holds a NUL character, or is over `limit` characters."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise input_invalid(field, _("Must be a string."))
    if "\x00" in value:
        raise input_invalid(field, _("Contains a NUL character."))
    if len(value) > limit:
        raise input_invalid(field, _("At most %(limit)s characters.") % {"limit": limit})
    return value


def input_invalid(field: str, message: str) -> AppError:
    """AppError `invalid` naming the field; `message` is already translated."""
    return AppError("invalid", message, details={field: message})

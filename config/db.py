"""Small query helpers for hot paths."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet


def row_or_none(queryset: QuerySet[Any]) -> Any:
    """The one row of a primary-key (or otherwise unique) lookup, or None: no ORDER BY, which
    `.first()` adds (the model's default ordering, or the pk) and costs a compile and a sort."""
    return next(iter(queryset.order_by()[:1]), None)

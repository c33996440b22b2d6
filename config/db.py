"""Small query helpers for hot paths."""

from __future__ import annotations

from typing import Any

from django.db.models import Aggregate, BooleanField, Func, JSONField, QuerySet


def row_or_none(queryset: QuerySet[Any]) -> Any:
    """The one row of a primary-key (or otherwise unique) lookup, or None: no ORDER BY, which
    `.first()` adds (the model's default ordering, or the pk) and costs a compile and a sort."""
    return next(iter(queryset.order_by()[:1]), None)


class JSONList(Aggregate):
    """The aggregated values as one JSON array, NULL over no rows (SQLite's `json_group_array`,
    Postgres's `jsonb_agg`): a list of related values read in its parent's statement."""

    function = "JSON_GROUP_ARRAY"
    output_field = JSONField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        """Postgres names it `jsonb_agg` (jsonb: Django's JSONField reads it as text)."""
        return super().as_sql(compiler, connection, function="JSONB_AGG", **extra_context)


class SameAs(Func):
    """Whether two values are equal, NULL equal to NULL (SQL's `IS NOT DISTINCT FROM`, SQLite's
    `IS`): what the ORM's `field=None` compiles to IS NULL, for a value given per call (a
    prepared statement's `Param`, which may be None)."""

    arg_joiner = " IS NOT DISTINCT FROM "
    template = "(%(expressions)s)"
    output_field = BooleanField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        """SQLite says `IS`."""
        return super().as_sql(compiler, connection, arg_joiner=" IS ", **extra_context)

"""Database code that reads Django's private internals, fenced to the Django it was written for.

Everything here leans on parts of Django that are not its public API and may change in any
feature release: `prepared.py` compiles hot statements once per connection the way
`ModelIterable`, `QuerySet.update()`, `save()` and `bulk_create()` compile theirs,
`sqlite_backend/` overrides the SQLite backend's transaction hooks, and `per_process.py` holds
each process's objects and lists its background threads. Importing the package checks that
Django is the feature release this was written for (`django_version_check`) and refuses to
start on another one, naming what to check, rather than failing later in a running turn.
This package also holds small query helpers for hot paths (`row_or_none`, `JSONList`, `SameAs`).
"""

from __future__ import annotations

from typing import Any

import django
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Aggregate, BooleanField, Func, JSONField, Lookup, QuerySet
from django.db.models.lookups import In

SUPPORTED_DJANGO = (5, 2)  # the feature release whose internals this package was checked against

PRIVATE_INTERNALS = (
    "SQLCompiler.select, .klass_info, .col_count, .annotation_col_map, .get_converters() and "
    ".apply_converters() (prepared.py: a lookup's columns and converters, as ModelIterable)",
    "django.db.models.query.get_related_populators (prepared.py: related objects of a lookup)",
    "UpdateQuery.add_update_values() and Query.chain() (prepared.py: an UPDATE, as "
    "QuerySet.update())",
    "InsertQuery(on_conflict=, update_fields=, unique_fields=).insert_values() and "
    "SQLInsertCompiler.returning_fields (prepared.py: an INSERT, as save() and bulk_create())",
    "Model._state.adding and ._state.db (prepared.py: a row marked saved after its INSERT)",
    "the SQLite DatabaseWrapper's _start_transaction_under_autocommit(), _commit(), _rollback() "
    "and _close(), SQLiteCursorWrapper.convert_query() and FORMAT_QMARK_REGEX "
    "(sqlite_backend/base.py: the process's writer lock)",
)


def django_version_check() -> None:
    """Raise ImproperlyConfigured unless Django is the feature release this package reads."""
    installed = django.VERSION[:2]
    if installed == SUPPORTED_DJANGO:
        return
    internals = "".join(f"\n  - {name}" for name in PRIVATE_INTERNALS)
    raise ImproperlyConfigured(
        f"config.db was written for Django {'.'.join(map(str, SUPPORTED_DJANGO))}.x and reads "
        f"its private internals, but Django {django.get_version()} is installed. Check each of "
        f"these against the installed Django:{internals}\n"
        "then run tests/test_prepared.py, tests/test_prepared_writes.py and "
        "tests/test_sqlite_backend.py, and change SUPPORTED_DJANGO in config/db/__init__.py."
    )


django_version_check()


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


class AnyOf(Lookup):
    """`lhs IN (values)` for a long list, as a filter expression (`.filter(AnyOf(F("pk"),
    ids))`): on Postgres the list is one array parameter (`= ANY(%s)`), where the ORM's `__in`
    compiles, binds and has the server parse a placeholder per value (12 µs of the reminder
    dispatcher's 48 µs of CPU a reminder); elsewhere the ORM's IN. The values go to the driver
    as they are: ints, strings, UUIDs."""

    lookup_name = "any_of"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> Any:
        """The ORM's IN."""
        return In(self.lhs, self.rhs).as_sql(compiler, connection)

    def as_postgresql(self, compiler: Any, connection: Any) -> Any:
        """One array, typed as the column."""
        lhs, params = self.process_lhs(compiler, connection)
        kind = self.lhs.output_field.db_type(connection)
        return f"{lhs} = ANY(%s::{kind}[])", [*params, list(self.rhs)]

"""Hot primary-key lookups whose SQL is compiled once per database connection, not per call.

Django compiles a queryset's SQL every time it runs it. For a lookup of many columns (a run with
its user, session, agent and root: about 130) the compile costs ten times the query itself:
1.9 ms of a 2.9 ms claim on SQLite, of which the database's own work is 0.2 ms. A
`PreparedLookup` compiles its queryset once per connection with a marker in place of the key,
keeps the compiler (its column list, related-object layout and converters) and afterwards only
swaps the key into the parameters, runs the SQL and builds the objects the way Django's
`ModelIterable` does. No ORM library keeps compiled queries (they cache results, which a claim
must never read), so this is ours; tests/test_prepared.py holds it to the ORM's answer, field by
field, on SQLite and Postgres.

The compiler's internals it reads (`select`, `klass_info`, `annotation_col_map`,
`get_converters`, `apply_converters`, `get_related_populators`) are those `ModelIterable` itself
uses in Django 5.2.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

from django.db import connections
from django.db.models import Field, Model, QuerySet
from django.db.models.query import get_related_populators
from django.db.transaction import TransactionManagementError

# A key no row has: compiled in the key's place, found in the parameters, swapped per call.
_MARKER = uuid.UUID("00000000-0000-4000-8000-00000000c0de")


class _Compiled:
    """One connection's compiled form of a lookup."""

    def __init__(self, queryset: QuerySet[Any], key_field: Field | None, using: str) -> None:
        connection = connections[using]
        self.connection = connection
        self.compiler = queryset.query.get_compiler(using=using)
        self.sql, params = self.compiler.as_sql()
        self.params, self.key_at = list(params), None
        if key_field is not None:
            marker = key_field.get_db_prep_value(_MARKER, connection)
            positions = [i for i, value in enumerate(params) if value == marker]
            if len(positions) != 1:
                raise ValueError("a prepared lookup filters on its key exactly once")
            self.key_at = positions[0]
        self.key_field = key_field
        # As the ORM: a lock outside a transaction is an error where the database has locks.
        self.for_update = (
            queryset.query.select_for_update and connection.features.has_select_for_update
        )
        select, klass_info = self.compiler.select, self.compiler.klass_info
        self.converters = self.compiler.get_converters(
            [column[0] for column in select[: self.compiler.col_count]]
        )
        fields = klass_info["select_fields"]
        self.model: type[Model] = klass_info["model"]
        self.start, self.end = fields[0], fields[-1] + 1
        self.init_list = [column[0].target.attname for column in select[self.start : self.end]]
        self.populators = get_related_populators(klass_info, select, using)
        self.annotations = dict(self.compiler.annotation_col_map or {})
        self.using = using

    def row(self, key: Any) -> Model | None:
        """The row for this key, built as the ORM would, or None."""
        if self.for_update and self.connection.get_autocommit():
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        params = list(self.params)
        if self.key_at is not None:
            params[self.key_at] = self.key_field.get_db_prep_value(key, self.connection)
        with self.connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            fetched = cursor.fetchone()
        if fetched is None:
            return None
        fetched = fetched[: self.compiler.col_count]  # without columns added for ordering
        row = next(iter(self.compiler.apply_converters([fetched], self.converters)))
        obj = self.model.from_db(self.using, self.init_list, row[self.start : self.end])
        for populator in self.populators:
            populator.populate(row, obj)
        for name, position in self.annotations.items():
            setattr(obj, name, row[position])
        return obj


class PreparedLookup:
    """A one-row queryset by key whose SQL each connection compiles once.

    `build(key)` returns the queryset for a key (any filters, `select_related`, `defer`,
    `select_for_update`); it is called once per connection, with a marker key, so its database
    (`QuerySet.db`) is the one every later call uses. Without a `key_field` the queryset names
    no key (a row unique by a constraint, such as the one entry agent): `build` ignores its
    argument and `row()` takes none.
    """

    def __init__(self, build: Callable[[Any], QuerySet[Any]], *, key_field: Field | None) -> None:
        self.build, self.key_field = build, key_field
        self._local = threading.local()

    def row(self, key: Any = None) -> Any:
        """The one row for `key`, or None."""
        # Connections are per thread, so is what was compiled for them.
        compiled: _Compiled | None = getattr(self._local, "compiled", None)
        if compiled is None or compiled.connection is not connections[compiled.using]:
            queryset = self.build(_MARKER).order_by()[:1]
            compiled = _Compiled(queryset, self.key_field, queryset.db)
            self._local.compiled = compiled
        return compiled.row(key)

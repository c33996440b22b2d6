"""Hot statements whose SQL is compiled once per database connection, not per call.

Django compiles a queryset's SQL every time it runs it. For a lookup of many columns (a run with
its user, session, agent and root: about 130) the compile costs ten times the query itself:
1.9 ms of a 2.9 ms claim on SQLite, of which the database's own work is 0.2 ms; a fenced
UPDATE of a run costs 120-200 µs through the ORM against 10 µs for its SQL. A statement here
is built once per connection by the ORM with a `Param` wherever a value changes per call; what
was compiled (the SQL, the parameter slots, for a lookup the column layout and converters) is
kept, and each call only puts its values in the slots (as the ORM prepares them: each
`Param`'s field's `get_db_prep_save`), runs the SQL and, for a lookup, builds the objects the
way Django's `ModelIterable` does. No ORM library keeps compiled queries (they cache results,
which a claim must never read), so this is ours; tests/test_prepared.py and
tests/test_prepared_writes.py hold it to the ORM's answers and rows, field by field, on SQLite
and Postgres.

The compiler's internals a lookup reads (`select`, `klass_info`, `annotation_col_map`,
`get_converters`, `apply_converters`, `get_related_populators`) are those `ModelIterable` itself
uses in Django 5.2; an update is compiled as `QuerySet.update()` compiles it, an insert as
`save()` and `bulk_create()` compile theirs. Importing `config.db` checks that Django is that
feature release (`config.db.django_version_check`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from django.core.exceptions import EmptyResultSet
from django.db import connections, router, transaction
from django.db.models import Expression, Field, Model, QuerySet
from django.db.models.constants import OnConflict
from django.db.models.query import get_related_populators
from django.db.models.sql import InsertQuery, UpdateQuery
from django.db.transaction import TransactionManagementError

M = TypeVar("M", bound=Model)

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper


class Param(Expression):
    """A value given at each run of a prepared statement: one placeholder, prepared for the
    database by its field (`get_db_prep_save`) at each call. A filter's `field=Param` never
    matches NULL (the ORM compiles `= None` as `IS NULL`, a placeholder cannot): where the value
    may be None, filter with `config.db.SameAs(F(field), Param)`."""

    def __init__(self, name: str, field: Field) -> None:
        super().__init__(output_field=field)
        self.name = name

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        return "%s", [self]

    def __repr__(self) -> str:
        return f"Param({self.name!r})"


class _Slots:
    """The compiled SQL and parameters of one statement on one connection, with the positions
    of its `Param`s."""

    def __init__(self, sql: str, params: Sequence[Any], names: set[str], using: str) -> None:
        self.connection = connections[using]
        self.using = using
        self.sql, self.params = sql, list(params)
        self.slots = [(i, p) for i, p in enumerate(self.params) if isinstance(p, Param)]
        self.names = {param.name for _, param in self.slots}
        missing = names - self.names
        if missing:
            raise ValueError(
                f"the statement never uses {sorted(missing)}: a prepared statement "
                "names each of its values at least once"
            )

    def bind(self, values: dict[str, Any]) -> list[Any]:
        """The parameters with each slot's value prepared as the ORM prepares it."""
        params = list(self.params)
        if not self.names <= values.keys():
            raise TypeError(f"no value given for {sorted(self.names - values.keys())}")
        for position, param in self.slots:
            params[position] = param.output_field.get_db_prep_save(
                values[param.name], self.connection
            )
        return params


class _CompiledLookup(_Slots):
    """One connection's compiled form of a lookup."""

    def __init__(self, queryset: QuerySet[Any], names: set[str]) -> None:
        using = queryset.db
        self.compiler = queryset.query.get_compiler(using=using)
        try:
            sql, params = self.compiler.as_sql()
        except EmptyResultSet:  # e.g. `__in` an empty list: no row, no query (as the ORM)
            sql, params, names = "", [], set()
        super().__init__(sql, params, names, using)
        # As the ORM: a lock outside a transaction is an error where the database has locks.
        self.for_update = (
            queryset.query.select_for_update and self.connection.features.has_select_for_update
        )
        if not sql:
            return
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

    def objects(self, values: dict[str, Any], *, one: bool) -> list[Model]:
        """The rows for these values, built as the ORM would."""
        if self.for_update and self.connection.get_autocommit():
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        if not self.sql:
            return []
        with self.connection.cursor() as cursor:
            cursor.execute(self.sql, self.bind(values))
            fetched = [cursor.fetchone()] if one else cursor.fetchall()
        if fetched == [None]:
            return []
        columns = self.compiler.col_count  # without columns added for ordering
        rows = self.compiler.apply_converters([row[:columns] for row in fetched], self.converters)
        return [self._build(row) for row in rows]

    def _build(self, row: Sequence[Any]) -> Model:
        obj = self.model.from_db(self.using, self.init_list, row[self.start : self.end])
        for populator in self.populators:
            populator.populate(row, obj)
        for name, position in self.annotations.items():
            setattr(obj, name, row[position])
        return obj


def _params(fields: Sequence[Field], values: Sequence[Any]) -> list[Any]:
    """The `Param`s a build gets for these key values: a list of them for a key given as a list
    or tuple; named as `_named` names the values."""
    return [
        [Param(f"{i}.{j}", field) for j in range(len(value))]
        if isinstance(value, list | tuple)
        else Param(str(i), field)
        for i, (field, value) in enumerate(zip(fields, values, strict=True))
    ]


def _named(fields: Sequence[Field], values: Sequence[Any]) -> dict[str, Any]:
    """The key values by the names of their `Param`s (every call: no `Param` is built)."""
    if len(values) != len(fields):
        raise TypeError(f"expected {len(fields)} key values, got {len(values)}")
    named: dict[str, Any] = {}
    for i, value in enumerate(values):
        if isinstance(value, list | tuple):
            named |= {f"{i}.{j}": item for j, item in enumerate(value)}
        else:
            named[str(i)] = value
    return named


def _shape(values: Sequence[Any]) -> tuple[int, ...]:
    """What a compiled form depends on: each key's length when it is a list (-1: one value)."""
    return tuple(len(v) if isinstance(v, list | tuple) else -1 for v in values)


class _PerConnection:
    """What a statement compiled, per thread (connections are per thread) and per shape."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self, shape: Any, compile_: Callable[[], _Slots]) -> Any:
        compiled: dict[Any, _Slots] = self._local.__dict__.setdefault("compiled", {})
        found = compiled.get(shape)
        if found is None or found.connection is not connections[found.using]:
            found = compiled[shape] = compile_()
        return found


class PreparedLookup:
    """A queryset by key whose SQL each connection compiles once.

    `build(*keys)` returns the queryset for its keys (any filters, `select_related`, `defer`,
    annotations, `select_for_update`), each key a `Param` standing for a value of the matching
    field of `keys`; a key given to `row`/`rows` as a list (for `__in`) reaches `build` as a
    list of `Param`s, and is compiled once per length. `build` runs once per connection, so its
    database (`QuerySet.db`) is the one every later call uses. Without `keys` the queryset
    names none (a row unique by a constraint, such as the one entry agent).
    """

    def __init__(self, build: Callable[..., QuerySet[Any]], *, keys: Sequence[Field] = ()) -> None:
        self.build, self.keys = build, tuple(keys)
        self._compiled = _PerConnection()

    def row(self, *values: Any) -> Any:
        """The first row for these key values (in the queryset's explicit order; a model's
        default ordering is dropped: a key names one row), or None."""
        named = _named(self.keys, values)  # first: a wrong number of keys is a clear error
        found = self._lookup("row", values).objects(named, one=True)
        return found[0] if found else None

    def rows(self, *values: Any) -> list[Any]:
        """Every row for these key values, in the queryset's order."""
        named = _named(self.keys, values)
        return self._lookup("rows", values).objects(named, one=False)

    def _lookup(self, kind: str, values: Sequence[Any]) -> _CompiledLookup:
        def compile_() -> _CompiledLookup:
            queryset = self.build(*_params(self.keys, values))
            if kind == "row":
                if not queryset.query.order_by:
                    queryset = queryset.order_by()
                queryset = queryset[:1]
            return _CompiledLookup(queryset, set(_named(self.keys, values)))

        return self._compiled.get((kind, _shape(values)), compile_)


class PreparedUpdate:
    """An UPDATE whose SQL each connection compiles once.

    `build()` returns the queryset to update and the new values, as `QuerySet.update()` takes
    them; every value that changes per call is a `Param` (alone or inside an expression, such
    as `F("tokens") + Param(...)`), in the filters too. `run(**values)` gives each `Param` its
    value by name and returns the number of rows updated.
    """

    def __init__(self, build: Callable[[], tuple[QuerySet[Any], dict[str, Any]]]) -> None:
        self.build = build
        self._compiled = _PerConnection()

    def run(self, **values: Any) -> int:
        """Update the rows the filters name with these values; how many were updated."""
        statement = self._compiled.get(None, lambda: self._compile(set(values)))
        with (
            transaction.mark_for_rollback_on_error(using=statement.using),
            statement.connection.cursor() as cursor,
        ):
            cursor.execute(statement.sql, statement.bind(values))
            return cursor.rowcount

    def _compile(self, names: set[str]) -> _Slots:
        queryset, updates = self.build()
        query = queryset.query.chain(UpdateQuery)
        query.add_update_values(updates)
        query.annotations = {}
        using = router.db_for_write(queryset.model)
        sql, params = query.get_compiler(using).as_sql()
        return _Slots(sql, params, names, using)


class PreparedSave:
    """`obj.save(update_fields=fields)` compiled once per connection: the row named by `obj`'s
    key gets those fields' values, each as save() takes it (`pre_save`: an `auto_now` field
    is dated now, on `obj` too). No save signals are sent."""

    def __init__(self, model: type[Model], *fields: str) -> None:
        self.fields = [model._meta.get_field(name) for name in fields]
        self._update = PreparedUpdate(
            lambda: (
                model._default_manager.filter(pk=Param("pk", model._meta.pk)),
                {field.name: Param(field.name, field) for field in self.fields},
            )
        )

    def save(self, obj: Model) -> int:
        """Write the fields of `obj`'s row; how many rows were updated (0: the row is gone)."""
        values = {field.name: field.pre_save(obj, False) for field in self.fields}
        return self._update.run(pk=obj.pk, **values)


def _prepared(field: Field, obj: Model, connection: BaseDatabaseWrapper) -> Any:
    """`obj`'s value of `field` as an insert writes it (`pre_save`, then `get_db_prep_save`)."""
    value = field.pre_save(obj, True)
    if hasattr(value, "resolve_expression"):
        raise TypeError(f"{field.name}: a prepared insert takes values, not expressions")
    return field.get_db_prep_save(value, connection)


class _CompiledInsert:
    """One connection's compiled INSERT of one row of a model."""

    def __init__(self, inserter: PreparedInsert, obj: Model, using: str) -> None:
        self.connection, self.using = connections[using], using
        model, opts = inserter.model, inserter.model._meta
        if opts.parents:  # save() writes each parent's table first; one INSERT cannot
            raise ValueError(f"{model.__name__}: a prepared insert writes one table")
        self.fields = [f for f in opts.concrete_fields if not f.generated]
        returning = []
        if opts.auto_field is not None and getattr(obj, opts.pk.attname) is None:
            self.fields.remove(opts.auto_field)  # the database numbers it: read it back
            returning = [opts.auto_field]
            if not self.connection.features.can_return_columns_from_insert:
                raise ValueError("a prepared insert reads its new key back with RETURNING")
        query = InsertQuery(
            model,
            on_conflict=inserter.on_conflict,
            update_fields=[opts.get_field(name) for name in inserter.update_fields],
            unique_fields=[opts.get_field(name) for name in inserter.unique_fields],
        )
        query.insert_values(self.fields, [obj])
        compiler = query.get_compiler(using=using)
        compiler.returning_fields = returning
        ((self.sql, params),) = compiler.as_sql()
        if len(params) != len(self.fields):
            raise ValueError(f"{model.__name__}: a prepared insert takes one value per column")
        self.returns_key = bool(returning)


class PreparedInsert:
    """An INSERT whose SQL each connection compiles once: `obj.save()` of a new row, or, with
    `on_conflict`, `bulk_create([obj], ...)`'s upsert or ignore, without building and
    compiling the query each time. Each column's value is prepared as the ORM prepares it
    (`pre_save`, so `auto_now` and its kin apply, then `get_db_prep_save`). No save signals
    are sent: a model written through it has no receivers (tests/test_prepared_writes.py)."""

    def __init__(
        self,
        model: type[Model],
        *,
        on_conflict: OnConflict | None = None,
        update_fields: Sequence[str] = (),
        unique_fields: Sequence[str] = (),
    ) -> None:
        self.model, self.on_conflict = model, on_conflict
        self.update_fields, self.unique_fields = tuple(update_fields), tuple(unique_fields)
        self._compiled = _PerConnection()

    def insert(self, obj: M) -> M:
        """Insert `obj` (its key read back when the database numbers it); `obj` itself."""
        using = router.db_for_write(self.model, instance=obj)
        numbered = getattr(obj, self.model._meta.pk.attname) is None
        statement = self._compiled.get(numbered, lambda: _CompiledInsert(self, obj, using))
        connection = statement.connection
        params = [_prepared(field, obj, connection) for field in statement.fields]
        with (
            transaction.mark_for_rollback_on_error(using=statement.using),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement.sql, params)
            returned = cursor.fetchone() if statement.returns_key else None
            if returned is not None:  # none when a conflict was ignored (as bulk_create)
                setattr(obj, self.model._meta.pk.attname, returned[0])
        obj._state.adding, obj._state.db = False, statement.using
        return obj

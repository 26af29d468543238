"""``ALTER TABLE ... {ALTER | CHANGE} COLUMN`` on Delta tables: delta-spark's
``AlterTableChangeColumnDeltaCommand``, one metadata-only commit.

A change sets a column's comment, moves it (``FIRST``, ``AFTER c``, within its struct),
drops its NOT NULL, drops its default, or changes its type: to the same type, or (with
``delta.enableTypeWidening``) a widening, recorded in ``delta.typeChanges`` as ``ALTER
COLUMN ... TYPE`` always did. Anything else is refused as delta-spark refuses it, with its
error classes: first Spark's analysis (unknown columns, one column changed twice, a struct,
map or array retyped, a type Spark cannot up-cast, ``SET NOT NULL`` on a nullable column),
then Delta's (no widening, a type change under a CHECK constraint or a generated column).

Data files are never rewritten: they are read by physical name or position-independent
name, so reordering is free, and widened types are widened by the reader.

Several columns at once (Spark 4's ``ALTER COLUMN a ..., b ...``) are applied in
delta-spark's order (``scala_order``) and recorded as ``CHANGE COLUMNS``; one as
``CHANGE COLUMN``, with delta-spark's ``operationParameters``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    ArrayType,
    CharType,
    DataType,
    MapType,
    StringType,
    StructField,
    StructType,
    VarcharType,
    _parse_datatype_string,
)
from sqlglot import exp

from ...exceptions import DeltaAnalysisException
from ...kernel import Snapshot, Table
from ...kernel.command_result import NOTHING_COMMITTED, CommandResult
from ...kernel.features import GENERATION_EXPRESSION, is_true
from ...kernel.identity import is_identity
from ...kernel.protocol import writer_features
from ..expressions.spark_types import can_up_cast
from ..read.field_metadata import IDENTITY_INFO_START, read_schema
from ..read.parquet import spark_schema
from ..write.constraints import CONSTRAINT_PREFIX
from .alter import TYPE_WIDENING_PROPERTY, commit_metadata, widened, widens
from .column_names import attribute_name, quoted, sql_type, type_name
from .scala_order import hash_map_order

CHAR_VARCHAR_KEY = "__CHAR_VARCHAR_TYPE_STRING"
CURRENT_DEFAULT_KEY = "CURRENT_DEFAULT"
_COLLECTION_PARTS = {"element", "key", "value"}


@dataclass(frozen=True)
class ColumnChange:
    """One column's part of the statement, as written (names not yet resolved)."""

    path: tuple[str, ...]
    data_type: DataType | None = None
    comment: str | None = None
    nullable: bool | None = None
    first: bool = False
    after: str | None = None
    drop_default: bool = False
    default: str | None = None  # SET DEFAULT's expression, as SQL


@dataclass(frozen=True)
class _Resolved:
    """A change against the table: its column as the schema spells it, and delta-spark's
    ``DeltaChangeColumnSpec.newColumn`` (the column with the change's attributes)."""

    parent: tuple[str, ...]
    field: StructField
    new_field: StructField
    new_type: DataType | None
    position: str | None

    @property
    def path(self) -> tuple[str, ...]:
        return (*self.parent, self.field.name)


def _raw_type(field: StructField) -> DataType:
    """The field's type as declared: ``CHAR``/``VARCHAR`` live as ``string`` plus metadata."""
    declared = field.metadata.get(CHAR_VARCHAR_KEY)
    return _parse_datatype_string(declared) if declared else field.dataType


def change_columns(spark: SparkSession, table: Table, changes: Sequence[ColumnChange], table_name: str) -> CommandResult:
    """Apply ``changes`` (one statement's) to the table's schema in one commit; ``table_name``
    names the table in errors as Spark does (``spark_catalog``.``default``.``t``)."""
    snapshot = table.snapshot()
    schema = spark_schema(snapshot)
    resolved = _analyze(spark, schema, changes, table_name)
    effective = [r for r in resolved if r is not None]
    if not effective:
        return NOTHING_COMMITTED  # Spark drops a change to the same type; nothing is left
    for change in effective:
        _verify(spark, snapshot, schema, change)
    by_path = {r.path: r for r in effective}
    ordered = [by_path[p] for p in hash_map_order(list(by_path))]

    def apply(conf: dict[str, str], current: StructType) -> tuple[dict[str, str], StructType]:
        for change in ordered:
            current = _apply(current, change)
        return conf, current

    return commit_metadata(table, apply, *_operation(ordered), snapshot=snapshot)


def _analyze(spark: SparkSession, schema: StructType, changes: Sequence[ColumnChange], table_name: str) -> list[_Resolved | None]:
    """Spark's analysis of the statement: names resolved, then ``CheckAnalysis``'s refusals.
    None for a change Spark drops (a type change to the column's own type, and nothing else)."""
    located = [(_locate(schema, change.path), change) for change in changes]
    paths = [(*parent, field.name) for (parent, field), _ in located]
    for i, path in enumerate(paths):
        repeated = path in paths[:i] or path in paths[i + 1 :]
        nested = any(other != path and other[: len(path)] == path for other in paths)
        if repeated or nested:
            raise DeltaAnalysisException(
                f"ALTER TABLE ALTER/CHANGE COLUMN is not supported for changing {table_name}'s column "
                f"{quoted(path)} including its nested fields multiple times in the same command.",
                errorClass="NOT_SUPPORTED_CHANGE_SAME_COLUMN",
            )
    return [_analyze_one(spark, schema, parent, field, change, table_name) for (parent, field), change in located]


def _analyze_one(
    spark: SparkSession,
    schema: StructType,
    parent: tuple[str, ...],
    field: StructField,
    change: ColumnChange,
    table_name: str,
) -> _Resolved | None:
    path = (*parent, field.name)
    new_type = change.data_type
    if new_type is not None and _same_type(field, new_type):
        new_type = None
    if new_type is not None:
        _check_retype(spark, field, new_type, path, table_name)
    if change.nullable is False and field.nullable:
        raise DeltaAnalysisException(
            f"Cannot change nullable column to non-nullable: {attribute_name(path)}.", errorClass="_LEGACY_ERROR_TEMP_2330"
        )
    if IDENTITY_INFO_START in field.metadata and (new_type is not None or change.nullable is not None or change.drop_default):
        raise DeltaAnalysisException(
            "ALTER TABLE ALTER COLUMN is not supported for IDENTITY columns.",
            errorClass="DELTA_IDENTITY_COLUMNS_ALTER_COLUMN_NOT_SUPPORTED",
        )
    position = None
    if change.first:
        position = "FIRST"
    elif change.after is not None:
        position = f"AFTER {_sibling(schema, parent, change.after)}"
    if new_type is None and change.comment is None and change.nullable is None and position is None:
        if not change.drop_default and change.default is None:
            return None
    new_field = field
    if change.comment is not None:
        if field.name in _COLLECTION_PARTS and _is_collection_part(schema, parent):
            raise DeltaAnalysisException(
                f"Can't add a comment to {attribute_name(path)}. Adding a comment to a map key/value or "
                "array element is not supported.",
                errorClass="DELTA_UNSUPPORTED_COMMENT_MAP_ARRAY",
            )
        new_field = _with_metadata(new_field, comment=change.comment)
    if new_type is not None:
        new_field = _retyped(new_field, new_type)
    if change.nullable is not None:
        new_field = StructField(new_field.name, new_field.dataType, change.nullable, new_field.metadata)
    if change.drop_default or change.default is not None:
        new_field = _with_metadata(new_field, **{CURRENT_DEFAULT_KEY: change.default})
    changed_type = new_field.dataType if new_field.dataType != field.dataType else None
    return _Resolved(parent, field, new_field, changed_type, position)


def _locate(schema: StructType, path: Sequence[str]) -> tuple[tuple[str, ...], StructField]:
    """The resolved parent path and the field at ``path`` (names matched case-insensitively);
    an array's ``element`` and a map's ``key`` and ``value`` are fields too, as in Spark."""
    current: DataType = schema
    resolved: list[str] = []
    field: StructField | None = None
    for depth, name in enumerate(path):
        found = _child(current, name)
        if found is None:
            if depth and not isinstance(current, (StructType, ArrayType, MapType)):
                raise DeltaAnalysisException(
                    f"Field name {quoted(path)} is invalid: {quoted(resolved)} is not a struct.",
                    errorClass="INVALID_FIELD_NAME",
                )
            raise _unresolved([*resolved, *path[depth:]], schema)
        field = found
        resolved.append(found.name)
        current = found.dataType
    assert field is not None
    return tuple(resolved[:-1]), field


def _child(data_type: DataType, name: str) -> StructField | None:
    lowered = name.lower()
    if isinstance(data_type, StructType):
        return next((f for f in data_type.fields if f.name.lower() == lowered), None)
    if isinstance(data_type, ArrayType) and lowered == "element":
        return StructField("element", data_type.elementType, data_type.containsNull)
    if isinstance(data_type, MapType) and lowered == "key":
        return StructField("key", data_type.keyType, False)
    if isinstance(data_type, MapType) and lowered == "value":
        return StructField("value", data_type.valueType, data_type.valueContainsNull)
    return None


def _unresolved(path: Sequence[str], schema: StructType) -> DeltaAnalysisException:
    columns = ", ".join(quoted([f.name]) for f in schema.fields)
    return DeltaAnalysisException(
        f"A column, variable, or function parameter with name {quoted(path)} cannot be resolved. "
        f"Did you mean one of the following? [{columns}].",
        errorClass="UNRESOLVED_COLUMN.WITH_SUGGESTION",
    )


def _container(schema: StructType, parent: Sequence[str]) -> DataType:
    current: DataType = schema
    for name in parent:
        found = _child(current, name)
        assert found is not None
        current = found.dataType
    return current


def _is_collection_part(schema: StructType, parent: Sequence[str]) -> bool:
    return isinstance(_container(schema, parent), (ArrayType, MapType))


def _sibling(schema: StructType, parent: tuple[str, ...], name: str) -> str:
    """The column ``AFTER name`` names, in the moved column's struct."""
    container = _container(schema, parent)
    found = _child(container, name) if isinstance(container, StructType) else None
    if found is None:
        raise _unresolved([*parent, name], schema)
    return found.name


def _same_type(field: StructField, new_type: DataType) -> bool:
    """Whether Spark sees no type change: the column's declared type, with nested fields as
    reads show them (comments count, Delta's internal keys do not)."""
    if isinstance(field.dataType, (StructType, ArrayType, MapType)):
        shown = read_schema(StructType([field])).fields[0].dataType
        return shown == new_type
    return _raw_type(field) == new_type


def _check_retype(spark: SparkSession, field: StructField, new_type: DataType, path: tuple[str, ...], table_name: str) -> None:
    """Spark's ``CheckAnalysis`` for a type change: only atomic columns, and only casts that lose nothing."""
    kinds = {StructType: "STRUCT_TYPE", MapType: "MAP_TYPE", ArrayType: "ARRAY_TYPE"}
    kind = next((k for cls, k in kinds.items() if isinstance(new_type, cls)), None)
    if kind is not None:
        how = {
            "STRUCT_TYPE": "Update a struct by updating its fields",
            "MAP_TYPE": f"Update a map by updating {quoted(path)}.key or {quoted(path)}.value",
            "ARRAY_TYPE": f"Update the element by updating {quoted(path)}.element",
        }[kind]
        raise DeltaAnalysisException(
            f"Cannot update {table_name} field {quoted(path)} type: {how}.", errorClass=f"CANNOT_UPDATE_FIELD.{kind}"
        )
    old_type = _raw_type(field)
    if not _can_alter(spark, old_type, new_type):
        raise DeltaAnalysisException(
            f"ALTER TABLE ALTER/CHANGE COLUMN is not supported for changing {table_name}'s column {quoted(path)} "
            f'with type "{sql_type(old_type)}" to {quoted(path)} with type "{sql_type(new_type)}".',
            errorClass="NOT_SUPPORTED_CHANGE_COLUMN",
        )


def _can_alter(spark: SparkSession, old: DataType, new: DataType) -> bool:
    if isinstance(old, CharType) and isinstance(new, CharType):
        return old.length == new.length
    if isinstance(old, (CharType, VarcharType)) and isinstance(new, VarcharType):
        return old.length <= new.length
    if isinstance(new, (CharType, VarcharType)):
        return False
    if isinstance(old, (CharType, VarcharType)):
        old = StringType()
    return can_up_cast(old, new)


def _retyped(field: StructField, new_type: DataType) -> StructField:
    """``field`` with ``new_type``; ``CHAR``/``VARCHAR`` stored as ``string`` and a metadata key."""
    if isinstance(new_type, (CharType, VarcharType)):
        return StructField(
            field.name, StringType(), field.nullable, {**field.metadata, CHAR_VARCHAR_KEY: new_type.simpleString()}
        )
    metadata = {k: v for k, v in field.metadata.items() if k != CHAR_VARCHAR_KEY}
    return StructField(field.name, new_type, field.nullable, metadata)


def _with_metadata(field: StructField, **values: Any) -> StructField:
    """``field`` with metadata keys set (a None value removes the key)."""
    metadata = {k: v for k, v in field.metadata.items() if k not in values}
    metadata.update({k: v for k, v in values.items() if v is not None})
    return StructField(field.name, field.dataType, field.nullable, metadata)


def _verify(spark: SparkSession, snapshot: Snapshot, schema: StructType, change: _Resolved) -> None:
    """delta-spark's own checks of a change Spark let through (``verifyColumnChange``)."""
    path = change.path
    if change.new_type is None:
        return
    if len(path) == 1 and is_identity(change.field.metadata, change.field.name) and change.new_type != change.field.dataType:
        raise DeltaAnalysisException(
            "ALTER TABLE ALTER COLUMN is not supported for IDENTITY columns.",
            errorClass="DELTA_IDENTITY_COLUMNS_ALTER_COLUMN_NOT_SUPPORTED",
        )
    old_type = change.field.dataType
    enabled, widening = is_true(snapshot.configuration, TYPE_WIDENING_PROPERTY), widens(old_type, change.new_type)
    if not enabled or not widening:
        message = (
            f"ALTER TABLE CHANGE COLUMN is not supported for changing column {attribute_name(path)} "
            f"from {sql_type(old_type)} to {sql_type(change.new_type)}"
        )
        if widening:
            message += (
                f" (a type widening: turn it on with ALTER TABLE ... SET TBLPROPERTIES ('{TYPE_WIDENING_PROPERTY}' = 'true'))"
            )
        elif enabled:
            message += (
                " (the type widenings sparkdelta writes: byte < short < int < long, float or int to double, "
                "wider decimals, integers to wide enough decimals)"
            )
        raise DeltaAnalysisException(message, errorClass="DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP")
    _check_dependents(spark, snapshot, schema, path)
    expression = change.field.metadata.get(GENERATION_EXPRESSION)
    if expression is not None and not change.parent:
        produced = _expression_type(spark, schema, str(expression))
        if produced != change.new_type:
            raise DeltaAnalysisException(
                f"The expression type of the generated column {change.field.name} is {sql_type(produced)}, "
                f"but the column type is {sql_type(change.new_type)}",
                errorClass="DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH",
            )


def _check_dependents(spark: SparkSession, snapshot: Snapshot, schema: StructType, path: tuple[str, ...]) -> None:
    """A column a CHECK constraint or a generated column reads keeps its type (delta-spark's
    ``checkDependentExpressions``): a reference depends on it when one path is a prefix of the other."""
    constraints = {k: v for k, v in snapshot.configuration.items() if k.lower().startswith(CONSTRAINT_PREFIX)}
    dependent = {k: v for k, v in constraints.items() if _reads(v, path)}
    if dependent:
        listed = "\n".join(f"{k} -> {v}" for k, v in dependent.items())
        raise DeltaAnalysisException(
            f"Cannot alter column {attribute_name(path)} because this column is referenced by the following "
            f"check constraint(s):\n{listed}",
            errorClass="DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE",
        )
    generated = {
        f.name: str(f.metadata[GENERATION_EXPRESSION])
        for f in schema.fields
        if GENERATION_EXPRESSION in f.metadata and _reads(str(f.metadata[GENERATION_EXPRESSION]), path)
    }
    if generated:
        listed = "\n".join(f"{k} -> {v}" for k, v in generated.items())
        raise DeltaAnalysisException(
            f"Cannot alter column {attribute_name(path)} because this column is referenced by the following "
            f"generated column(s):\n{listed}",
            errorClass="DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE",
        )


def _reads(expression: str, path: tuple[str, ...]) -> bool:
    for column in sqlglot.parse_one(expression, read="spark").find_all(exp.Column):
        parts = [p.name for p in column.parts]
        outer = column.parent
        while isinstance(outer, exp.Dot) and isinstance(outer.expression, exp.Identifier):
            parts.append(outer.expression.name)
            outer = outer.parent
        if all(a.lower() == b.lower() for a, b in zip(parts, path, strict=False)):
            return True
    return False


def _expression_type(spark: SparkSession, schema: StructType, expression: str) -> DataType:
    plain = StructType([StructField(f.name, f.dataType, f.nullable) for f in schema.fields])
    return spark.createDataFrame([], plain).selectExpr(expression).schema.fields[0].dataType


def _apply(schema: StructType, change: _Resolved) -> StructType:
    """``schema`` with ``change`` applied (``AlterTableChangeColumnDeltaCommand.transformSchemaOnce``).

    A new type for an array's element or a map's key or value is recorded on the struct
    field holding the array or map, with the ``fieldPath`` to it, as delta-spark records it."""
    changed = _transform(schema, change.parent, lambda container: _changed(container, change))
    assert isinstance(changed, StructType)
    if change.new_type is None or not _is_collection_part(schema, change.parent):
        return changed
    path = change.path
    owner = len(path) - 1
    while owner > 0 and _is_collection_part(schema, path[:owner]):
        owner -= 1
    holder, name = path[:owner], path[owner]
    original = _container(schema, holder)
    assert isinstance(original, StructType)
    recorded = widened(original[name], change.new_type, ".".join(path[owner + 1 :]))

    def record(struct: DataType) -> DataType:
        assert isinstance(struct, StructType)
        return StructType(
            [StructField(f.name, f.dataType, f.nullable, recorded.metadata) if f.name == name else f for f in struct.fields]
        )

    result = _transform(changed, holder, record)
    assert isinstance(result, StructType)
    return result


def _transform(data_type: DataType, parent: Sequence[str], update: Callable[[DataType], DataType]) -> DataType:
    """``data_type`` with the container at ``parent`` (a struct, array or map) replaced by ``update(it)``."""
    if not parent:
        return update(data_type)
    head, rest = parent[0], parent[1:]
    if isinstance(data_type, StructType):
        return StructType(
            [
                StructField(f.name, _transform(f.dataType, rest, update), f.nullable, f.metadata) if f.name == head else f
                for f in data_type.fields
            ]
        )
    if isinstance(data_type, ArrayType):
        return ArrayType(_transform(data_type.elementType, rest, update), data_type.containsNull)
    assert isinstance(data_type, MapType)
    if head == "key":
        return MapType(_transform(data_type.keyType, rest, update), data_type.valueType, data_type.valueContainsNull)
    return MapType(data_type.keyType, _transform(data_type.valueType, rest, update), data_type.valueContainsNull)


def _changed(container: DataType, change: _Resolved) -> DataType:
    if isinstance(container, ArrayType):  # element: its type only
        return ArrayType(_new_child_type(container.elementType, change), container.containsNull)
    if isinstance(container, MapType):
        if change.field.name == "key":
            return MapType(_new_child_type(container.keyType, change), container.valueType, container.valueContainsNull)
        return MapType(container.keyType, _new_child_type(container.valueType, change), container.valueContainsNull)
    assert isinstance(container, StructType)
    old = next(f for f in container.fields if f.name == change.field.name)
    new = change.new_field
    metadata = {k: v for k, v in old.metadata.items() if k not in (CHAR_VARCHAR_KEY, CURRENT_DEFAULT_KEY, "comment")}
    metadata.update({k: v for k, v in new.metadata.items() if k in (CHAR_VARCHAR_KEY, CURRENT_DEFAULT_KEY, "comment")})
    updated = StructField(old.name, old.dataType, new.nullable, metadata)
    if change.new_type is not None:
        updated = _widen_child(updated, change.new_type)
    fields = [updated if f.name == old.name else f for f in container.fields]
    if change.position is None:
        return StructType(fields)
    start = [f.name for f in container.fields].index(old.name)
    others = [f for f in fields if f.name != old.name]
    if change.position == "FIRST":
        return StructType([updated, *others])
    after = change.position.removeprefix("AFTER ")
    at = start if after == old.name else next(i for i, f in enumerate(others) if f.name == after) + 1
    return StructType([*others[:at], updated, *others[at:]])


def _widen_child(field: StructField, new_type: DataType) -> StructField:
    return widened(field, new_type) if new_type != field.dataType else field


def _new_child_type(current: DataType, change: _Resolved) -> DataType:
    return change.new_type if change.new_type is not None else current


def _operation(changes: Sequence[_Resolved]) -> tuple[str, dict[str, Any]]:
    """delta-spark's ``ChangeColumn`` (one column) or ``ChangeColumns`` and their parameters."""

    def described(change: _Resolved) -> dict[str, Any]:
        field = change.new_field
        return {
            "name": attribute_name(change.path),
            "type": type_name(field.dataType),
            "nullable": field.nullable,
            "metadata": field.metadata,
        }

    def compact(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    if len(changes) == 1:
        (change,) = changes
        parameters = {"column": compact(described(change))}
        if change.position is not None:
            parameters["position"] = change.position
        return "CHANGE COLUMN", parameters
    columns = [_with_position(described(c), c.position) for c in changes]
    return "CHANGE COLUMNS", {"columns": compact(columns)}


# A column with a position has five keys, which Scala keeps in a hash map: delta-spark writes them in this order.
_FIVE_KEY_ORDER = ("nullable", "name", "metadata", "position", "type")


def _with_position(column: dict[str, Any], position: str | None) -> dict[str, Any]:
    if position is None:
        return column
    placed = {**column, "position": position}
    return {key: placed[key] for key in _FIVE_KEY_ORDER}


def refuse_defaults_without_feature(table: Table) -> None:
    """``ALTER COLUMN c SET DEFAULT e``: delta-spark's refusal without the ``allowColumnDefaults`` feature."""
    if "allowColumnDefaults" not in writer_features(table.snapshot().protocol):
        raise DeltaAnalysisException(
            "Failed to execute ALTER TABLE command because it assigned a column DEFAULT value,\n"
            "but the corresponding table feature was not enabled. Please retry the command again\n"
            "after executing ALTER TABLE tableName SET\n"
            "TBLPROPERTIES('delta.feature.allowColumnDefaults' = 'supported').",
            errorClass="WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED",
        )


__all__ = ["ColumnChange", "change_columns", "refuse_defaults_without_feature"]

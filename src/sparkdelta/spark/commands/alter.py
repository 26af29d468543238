"""ALTER TABLE on Delta tables: columns, CHECK constraints, clustering; metadata-only commits.

Each change is one commit of new metadata, prepared by the kernel (protocol upgrades
for features it turns on, column-mapping ids for new columns) under delta-spark's
operation names. Renaming and dropping columns need column mapping (``name`` or
``id``), so that data files keep their physical column names and nothing is rewritten.
``CLUSTER BY`` changes the liquid-clustering columns (a domain-metadata commit): files
already clustered stay as they are, OPTIMIZE clusters new data by the new columns.
A new CHECK constraint is validated against every existing row first (one Spark job).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, DecimalType, MapType, StructField, StructType

from ...exceptions import DeltaAnalysisException
from ...kernel import Metadata, Snapshot, Table, metadata_change
from ...kernel.clustering import CLUSTERING_FEATURE, clustering_domain
from ...kernel.column_mapping import mapping_mode
from ...kernel.command_result import CommandResult
from ...kernel.protocol import FEATURE_PROP_PREFIX, require_writable, required_protocol, writer_features
from ..read.parquet import read_snapshot, spark_schema
from ..write.constraints import CONSTRAINT_PREFIX
from ..write.schema import delta_schema_json, new_table_schema
from .column_names import attribute_name, quoted, type_name

TYPE_WIDENING_PROPERTY = "delta.enableTypeWidening"
TYPE_CHANGES_KEY = "delta.typeChanges"


class _Unchanged:
    """The description argument's default: keep the table's."""


UNCHANGED = _Unchanged()


def commit_metadata(
    table: Table,
    change: Any,
    operation: str,
    parameters: dict[str, Any],
    renamed_partition: tuple[str, str] | None = None,
    checked: Snapshot | None = None,
    snapshot: Snapshot | None = None,
    description: str | None | _Unchanged = UNCHANGED,
    tags: dict[str, str] | None = None,
) -> CommandResult:
    """Commit ``change(configuration, schema) -> (configuration, schema)`` as new metadata (no metrics, as delta-spark's).

    ``renamed_partition`` (old name, new name) renames a partition column in the
    metadata's partition columns too, as delta-spark does. ``checked`` is the snapshot whose
    rows the change was validated against: the commit then depends on all of them, so a
    concurrent append refuses it rather than slip unchecked rows past it. ``snapshot`` is
    the one the change was worked out against, when it only read the schema. ``description``
    replaces the table's description (its comment) when given; ``tags`` go to the commitInfo.
    """
    snapshot = checked or snapshot or table.snapshot()
    require_writable(snapshot.protocol, snapshot.metadata, table.root)
    configuration, schema = change(dict(snapshot.metadata.configuration), spark_schema(snapshot))
    partition_columns = snapshot.metadata.partition_columns
    if renamed_partition is not None:
        old, new = renamed_partition
        partition_columns = tuple(new if c.lower() == old.lower() else c for c in partition_columns)
    wanted: Metadata = replace(
        snapshot.metadata,
        configuration=configuration,
        schema_string=delta_schema_json(schema),
        partition_columns=partition_columns,
    )
    if not isinstance(description, _Unchanged):
        wanted = replace(wanted, description=description)
    prepared, protocol = metadata_change.prepare(wanted, snapshot.metadata, snapshot.protocol)
    actions: list[Any] = [prepared] if protocol is snapshot.protocol else [protocol, prepared]
    transaction = table.transaction(read_snapshot=snapshot)
    if checked is not None:
        transaction.mark_read_whole_table()
    return CommandResult(transaction.commit(actions, operation, parameters, tags=tags), {})


def _field(schema: StructType, path: list[str], where: str) -> tuple[StructType, StructField]:
    """The struct holding the column at ``path`` and the column itself (names matched case-insensitively)."""
    parent = schema
    for depth, name in enumerate(path):
        found = next((f for f in parent.fields if f.name.lower() == name.lower()), None)
        if found is None:
            raise DeltaAnalysisException(f"{where}: no column {'.'.join(path)}")
        if depth == len(path) - 1:
            return parent, found
        if not isinstance(found.dataType, StructType):
            raise DeltaAnalysisException(f"{where}: {'.'.join(path[: depth + 1])} is not a struct")
        parent = found.dataType
    raise DeltaAnalysisException(f"{where}: no column given")


def _replaced(schema: StructType, path: list[str], new: StructType) -> StructType:
    """``schema`` with the struct at ``path`` (a struct column, or the root for ``[]``) replaced by ``new``."""
    if not path:
        return new
    fields = []
    for f in schema.fields:
        if f.name.lower() == path[0].lower():
            assert isinstance(f.dataType, StructType)
            f = StructField(f.name, _replaced(f.dataType, path[1:], new), f.nullable, f.metadata)
        fields.append(f)
    return StructType(fields)


def add_columns(table: Table, columns: list[tuple[list[str], StructField, str | None]]) -> CommandResult:
    """Add columns to the table or to a struct (``path`` is the new column's full name), each at
    its position: None (the end), ``FIRST``, or the name of the column it goes after. Each
    column goes in after the ones before it, as in delta-spark."""
    snapshot = table.snapshot()
    schema = spark_schema(snapshot)
    listed = []
    for path, field, position in columns:
        parent_path = path[:-1]
        parent = schema if not parent_path else _field(schema, parent_path, table.root)[1].dataType
        assert isinstance(parent, StructType)
        if any(f.name.lower() == path[-1].lower() for f in parent.fields):
            raise DeltaAnalysisException(f"{table.root}: column {'.'.join(path)} already exists")
        if not field.nullable:
            raise DeltaAnalysisException(f"{table.root}: a column added to an existing table must be nullable ({'.'.join(path)})")
        added = new_table_schema(StructType([field])).fields[0]
        added = StructField(path[-1], added.dataType, True, field.metadata)
        fields = list(parent.fields)
        at, shown = len(fields), None
        if position == "FIRST":
            at, shown = 0, "FIRST"
        elif position is not None:
            after = next((i for i, f in enumerate(fields) if f.name.lower() == position.lower()), None)
            if after is None:
                raise DeltaAnalysisException(
                    f"No such struct field {quoted([position])} in {', '.join(quoted([f.name]) for f in fields)}.",
                    errorClass="FIELD_NOT_FOUND",
                )
            at, shown = after + 1, f"AFTER {fields[after].name}"
        schema = _replaced(schema, parent_path, StructType([*fields[:at], added, *fields[at:]]))
        column = {"name": attribute_name(path), "type": type_name(field.dataType), "nullable": field.nullable}
        described: dict[str, Any] = {"column": {**column, "metadata": field.metadata}}
        listed.append(described if shown is None else {**described, "position": shown})
    parameters = {"columns": json.dumps(listed, separators=(",", ":"), ensure_ascii=False)}
    return commit_metadata(table, lambda conf, _: (conf, schema), "ADD COLUMNS", parameters, snapshot=snapshot)


_INTEGERS = ("byte", "short", "integer", "long")


def widens(old: DataType, new: DataType) -> bool:
    """Whether ``old`` -> ``new`` is one of the type changes PROTOCOL.md's Type Widening allows.

    Date -> timestamp_ntz is allowed there too; it is left out here because stats written as
    dates would then be compared as timestamps."""
    old_name, new_name = old.typeName(), new.typeName()
    if old_name in _INTEGERS and new_name in _INTEGERS:
        return _INTEGERS.index(old_name) < _INTEGERS.index(new_name)
    if new_name == "double":
        return old_name in ("float", "byte", "short", "integer")
    if isinstance(new, DecimalType):
        if isinstance(old, DecimalType):
            grown, scaled = new.precision - old.precision, new.scale - old.scale
            return grown >= scaled >= 0 and (grown, scaled) != (0, 0)
        digits = {"byte": 10, "short": 10, "integer": 10, "long": 20}.get(old_name)
        return digits is not None and new.precision - digits >= new.scale >= 0
    return False


def widened(field: StructField, new_type: DataType, field_path: str | None = None) -> StructField:
    """``field`` with its change to ``new_type`` recorded in ``delta.typeChanges`` (type widening).

    ``field_path`` (``element``, ``value``...) says the change is to a type inside the field's
    array or map, whose own type is then ``new_type``'s container: the field keeps its type."""
    old_type = field.dataType if field_path is None else _inner_type(field.dataType, field_path)
    entry: dict[str, Any] = {"toType": new_type.jsonValue(), "fromType": old_type.jsonValue()}
    if field_path is not None:
        entry["fieldPath"] = field_path
    history = [*field.metadata.get(TYPE_CHANGES_KEY, []), entry]
    data_type = new_type if field_path is None else field.dataType
    return StructField(field.name, data_type, field.nullable, {**field.metadata, TYPE_CHANGES_KEY: history})


def _inner_type(data_type: DataType, field_path: str) -> DataType:
    for part in field_path.split("."):
        if isinstance(data_type, ArrayType):
            data_type = data_type.elementType
        elif isinstance(data_type, MapType):
            data_type = data_type.keyType if part == "key" else data_type.valueType
    return data_type


def _require_mapping(table: Table, what: str) -> None:
    if mapping_mode(table.snapshot().configuration) == "none":
        raise DeltaAnalysisException(
            f"{table.root}: {what} needs column mapping; enable it first with "
            "ALTER TABLE ... SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
        )


def rename_column(table: Table, path: list[str], new_name: str) -> CommandResult:
    """Rename a column or struct field; data files keep its physical name. A partition column
    is renamed in the partition columns too (partition values are keyed by physical name)."""
    _require_mapping(table, "renaming a column")

    def change(conf: dict[str, str], schema: StructType) -> tuple[dict[str, str], StructType]:
        parent, field = _field(schema, path, table.root)
        if any(f.name.lower() == new_name.lower() for f in parent.fields if f is not field):
            raise DeltaAnalysisException(f"{table.root}: cannot rename {'.'.join(path)} to {new_name}: that column exists")
        renamed = StructField(new_name, field.dataType, field.nullable, field.metadata)
        return conf, _replaced(schema, path[:-1], StructType([renamed if f is field else f for f in parent.fields]))

    parameters = {"oldColumnPath": ".".join(path), "newColumnPath": ".".join([*path[:-1], new_name])}
    return commit_metadata(table, change, "RENAME COLUMN", parameters, (path[0], new_name) if len(path) == 1 else None)


def drop_columns(table: Table, paths: list[list[str]], if_exists: bool) -> CommandResult:
    _require_mapping(table, "dropping a column")

    def change(conf: dict[str, str], schema: StructType) -> tuple[dict[str, str], StructType]:
        partitions = {c.lower() for c in table.snapshot().partition_columns}
        for path in paths:
            try:
                parent, field = _field(schema, path, table.root)
            except DeltaAnalysisException:
                if if_exists:
                    continue
                raise
            if len(path) == 1 and path[0].lower() in partitions:
                raise DeltaAnalysisException(f"{table.root}: cannot drop partition column {path[0]}")
            remaining = [f for f in parent.fields if f is not field]
            if not remaining:
                raise DeltaAnalysisException(f"{table.root}: cannot drop {'.'.join(path)}: it is the last column of its struct")
            schema = _replaced(schema, path[:-1], StructType(remaining))
        return conf, schema

    return commit_metadata(table, change, "DROP COLUMNS", {"columns": json.dumps([".".join(p) for p in paths])})


def cluster_by(table: Table, columns: list[str]) -> CommandResult:
    """Make ``columns`` the clustering columns (none: unclustered); existing files are not rewritten.
    A partitioned table is refused either way, as in delta-spark."""
    snapshot = table.snapshot()
    require_writable(snapshot.protocol, snapshot.metadata, table.root)
    if snapshot.partition_columns:
        raise DeltaAnalysisException(
            "ALTER TABLE CLUSTER BY cannot be applied to a partitioned table.",
            errorClass="DELTA_ALTER_TABLE_CLUSTER_BY_ON_PARTITIONED_TABLE_NOT_ALLOWED",
        )
    domain = clustering_domain(snapshot.schema, columns, snapshot.partition_columns, table.root)
    actions: list[Any] = [domain]
    if CLUSTERING_FEATURE not in writer_features(snapshot.protocol):
        wanted = replace(
            snapshot.metadata,
            configuration={**snapshot.metadata.configuration, f"{FEATURE_PROP_PREFIX}{CLUSTERING_FEATURE}": "supported"},
        )
        actions.insert(0, required_protocol(wanted, snapshot.protocol))
    parameters = {"clusteringColumns": json.dumps(columns, separators=(",", ":"))}
    return CommandResult(table.transaction(read_snapshot=snapshot).commit(actions, "CLUSTER BY", parameters), {})


def add_constraint(spark: SparkSession, table: Table, name: str, expression: str) -> CommandResult:
    """Add CHECK constraint ``name``, after checking that every existing row satisfies it."""
    key = f"{CONSTRAINT_PREFIX}{name.lower()}"
    snapshot = table.snapshot()
    if key in {k.lower() for k in snapshot.configuration}:
        raise DeltaAnalysisException(
            f"{table.root}: constraint '{name}' already exists; drop it first", errorClass="DELTA_CONSTRAINT_ALREADY_EXISTS"
        )
    violating = read_snapshot(spark, snapshot).where(~F.coalesce(F.expr(expression), F.lit(False))).count()
    if violating:
        raise DeltaAnalysisException(
            f"{table.root}: {violating} rows in version {snapshot.version} violate the new CHECK constraint ({expression})",
            errorClass="DELTA_NEW_CHECK_CONSTRAINT_VIOLATION",
        )
    return commit_metadata(
        table,
        lambda conf, schema: ({**conf, key: expression}, schema),
        "ADD CONSTRAINT",
        {"name": name, "expr": expression},
        checked=snapshot,
    )


def drop_constraint(table: Table, name: str, if_exists: bool) -> CommandResult:
    def change(conf: dict[str, str], schema: StructType) -> tuple[dict[str, str], StructType]:
        key = next((k for k in conf if k.lower() == f"{CONSTRAINT_PREFIX}{name.lower()}"), None)
        if key is None:
            if if_exists:
                return conf, schema
            raise DeltaAnalysisException(
                f"{table.root}: constraint '{name}' does not exist", errorClass="DELTA_CONSTRAINT_DOES_NOT_EXIST"
            )
        return {k: v for k, v in conf.items() if k != key}, schema

    return commit_metadata(table, change, "DROP CONSTRAINT", {"name": name})

"""``df.writeTo(table)`` on Delta tables: the statements of Spark's ``DataFrameWriterV2``.

``writer_v2.py`` records what a writer was told and hands the statement here when the
table is Delta's. Each statement does what delta-spark (4.4) does with it, and records
it in history as delta-spark does (``tests/spark/write/test_writer_v2.py`` checks both):

- ``create()``: CREATE TABLE AS SELECT; an existing table fails with Spark's
  ``TABLE_OR_VIEW_ALREADY_EXISTS``.
- ``replace()`` and ``createOrReplace()``: REPLACE TABLE AS SELECT and CREATE OR REPLACE
  TABLE AS SELECT. The new table replaces the old one in one commit: a new id, only the
  given properties, partitioning and description, the old files removed, the protocol
  kept (never lowered). ``replace()`` of a missing table fails with
  ``TABLE_OR_VIEW_NOT_FOUND``.
- ``append()``, ``overwrite(condition)`` (the condition is a replaceWhere, recorded as
  Spark resolves it), ``overwritePartitions()`` (dynamic partition overwrite; an
  unpartitioned table is replaced whole): WRITEs, columns matched by name. A missing path
  table fails with ``PATH_NOT_FOUND``.

Settings: ``tableProperty`` gives properties (``comment`` is the description,
``location`` makes a named table external), and ``delta.*`` options become properties too;
``partitionedBy`` takes columns (Delta partitions by value only: a transform such as
``years(ts)`` or ``bucket(4, id)`` is refused by name, as delta-spark refuses it);
``clusterBy`` makes a liquid-clustered table, as SQL's ``CLUSTER BY`` does (delta-spark
4.4's writer refuses it, taking it for a partition transform). As in delta-spark, a create
or replace ignores the ``userMetadata`` option (the session's setting applies) and its
writer's ``replaceWhere`` and partition overwrite mode, and a named Delta table is replaced
only with ``using("delta")`` (without it the statement's provider is the session's default
source: ``UNSUPPORTED_FEATURE.TABLE_OPERATION``). A path table ``delta.`/path``` is Delta's
with or without ``using`` (delta-spark takes ``delta`` there for a database unless told).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as replace_options
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from ..exceptions import DeltaAnalysisException
from ..kernel import Metadata, Snapshot, TableNotFoundError
from .catalog import CatalogEntry, default_location, is_temp_view, lookup, qualified_name, register, unregister
from .commands.column_names import quoted
from .expressions import resolve_condition
from .expressions.tree import Call, Expr, Lit, Ref, from_column
from .identifiers import split_identifier
from .options import DeltaOptions
from .paths import normalize_location
from .read.parquet import spark_schema, without_field_metadata
from .read.predicates import schema_probe
from .storage import open_table
from .write.dataframe import write_dataframe

CREATE, REPLACE, CREATE_OR_REPLACE = "create", "replace", "createOrReplace"
APPEND, OVERWRITE, OVERWRITE_PARTITIONS = "append", "overwrite", "overwritePartitions"
TABLE_STATEMENTS = (CREATE, REPLACE, CREATE_OR_REPLACE)
_OPERATIONS = {
    CREATE: "CREATE TABLE AS SELECT",
    REPLACE: "REPLACE TABLE AS SELECT",
    CREATE_OR_REPLACE: "CREATE OR REPLACE TABLE AS SELECT",
}
DELTA = "delta"
# Table properties Spark reserves: the description and location; the others are not Delta's.
_COMMENT, _LOCATION = "comment", "location"
_RESERVED = {_COMMENT, _LOCATION, "provider", "owner", "external", "is_managed_location"}
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class WriteTo:
    """What a ``DataFrameWriterV2`` was told: its provider (``using``), options (keyed as
    ``DeltaOptions`` keys them), table properties, ``partitionedBy`` columns or transforms
    as given, and ``clusterBy`` columns."""

    provider: str | None = None
    options: Mapping[str, Any] | None = None
    properties: Mapping[str, str] | None = None
    partitioning: Sequence[Any] = ()
    clustering: Sequence[str] = ()


@dataclass(frozen=True)
class Target:
    """Where a ``writeTo`` identifier leads: a path table (``delta.`/path```) or a name in the
    session catalog, with its entry when it has one."""

    location: str | None
    name: str | None
    entry: CatalogEntry | None

    @property
    def label(self) -> str:
        """The table as Spark's errors name it."""
        if self.name is None:
            return f"`delta`.`{self.location}`"
        return ".".join(f"`{part}`" for part in self.name.split(".", 1))


def _is_absolute(path: str) -> bool:
    """Hadoop's ``Path.isAbsolute``, which delta-spark asks of ``delta.`<path>```."""
    return path.startswith("/") or bool(_URI_SCHEME.match(path))


def resolve(spark: SparkSession, identifier: str) -> Target | None:
    """The target ``identifier`` names, or None where sparkdelta does not serve it (another
    catalog, a temporary view, an identifier Spark does not parse)."""
    parts = split_identifier(identifier)
    if parts is None:  # Spark reports an identifier it cannot parse itself
        return None
    if len(parts) == 2 and parts[0].lower() == DELTA and _is_absolute(parts[1]):
        return Target(normalize_location(parts[1]), None, None)
    if len(parts) == 1 and is_temp_view(spark, quoted(parts)):
        return None
    try:
        return Target(None, qualified_name(spark, identifier), lookup(spark, identifier))
    except DeltaAnalysisException:  # not a session-catalog name
        return None


def serves(spark: SparkSession, target: Target, statement: str, provider: str | None) -> bool:
    """Whether a statement on ``target`` is Delta's: a path table always; a table statement
    with ``using("delta")``, or without a provider on an existing Delta table (or when Delta
    is the session's default source); a write when the table is Delta."""
    is_delta_entry = target.entry is not None and target.entry.is_delta
    if target.name is None:
        return provider is None or provider == DELTA or statement not in TABLE_STATEMENTS
    if statement not in TABLE_STATEMENTS:
        return is_delta_entry
    if provider is not None:
        return provider == DELTA
    if target.entry is not None:
        return is_delta_entry
    return str(spark.conf.get("spark.sql.sources.default", "parquet")).lower() == DELTA


def partition_columns(partitioning: Sequence[Any], label: str) -> list[str]:
    """``partitionedBy``'s arguments as column names; transforms are refused by name."""
    names = []
    for item in partitioning:
        if isinstance(item, str):
            names.append(item)
            continue
        kind, detail = _column_node(item)
        if kind == "attribute" and detail is not None:
            names.append(detail)
        elif kind == "bucket":
            raise DeltaAnalysisException(
                f"Operation not allowed: `Bucketing` is not supported for Delta tables: {label}",
                errorClass="DELTA_OPERATION_NOT_ALLOWED_DETAIL",
            )
        else:
            raise DeltaAnalysisException(
                f"Operation not allowed: `Partitioning by expressions` is not supported for Delta tables: "
                f"partitionedBy({detail}) on {label}. Delta tables are partitioned by the values of columns: "
                f"add the expression as a column (withColumn) and partition by that column",
                errorClass="DELTA_OPERATION_NOT_ALLOWED",
            )
    return names


def _column_node(column: Column) -> tuple[str, str | None]:
    """What a ``partitionedBy`` Column is: ("attribute", its name) for a top-level column,
    ("bucket", ...) for ``bucket``, else ("expression", its text, as ``years(d)``)."""
    tree = from_column(column)
    if isinstance(tree, Ref) and len(tree.parts) == 1:
        return "attribute", tree.parts[0]
    kind = "bucket" if isinstance(tree, Call) and tree.name == "bucket" else "expression"
    return kind, _transform_text(tree) or str(column)


def _transform_text(tree: Expr) -> str | None:
    """A partition transform as written (``years(d)``, ``bucket(4, id)``); None for other shapes."""
    if isinstance(tree, Ref):
        return ".".join(tree.parts)
    if isinstance(tree, Lit):
        return str(tree.value)
    if isinstance(tree, Call):
        args = [_transform_text(arg) for arg in tree.args]
        return None if None in args else f"{tree.name}({', '.join(a for a in args if a is not None)})"
    return None


def _delta_options(write: WriteTo) -> DeltaOptions:
    return DeltaOptions.parse(dict(write.options or {}))


def _recorded(statement: str, managed: bool, clustering: Sequence[str]) -> Callable[[Metadata], tuple[str, dict[str, Any]]]:
    """The table statement's history entry, as delta-spark's writes it: the committed table's
    description, partitioning and properties."""

    def record(metadata: Metadata) -> tuple[str, dict[str, Any]]:
        return _OPERATIONS[statement], {
            "isManaged": str(managed).lower(),
            "description": metadata.description,
            "partitionBy": json.dumps(list(metadata.partition_columns), separators=(",", ":")),
            "clusterBy": json.dumps(list(clustering), separators=(",", ":")),
            "properties": json.dumps(dict(metadata.configuration), separators=(",", ":")),
        }

    return record


def create_or_replace(df: DataFrame, write: WriteTo, target: Target, statement: str) -> None:
    """``create()``, ``replace()`` or ``createOrReplace()`` on ``target``."""
    spark = df.sparkSession
    _refuse_another_provider(spark, write, target, statement)
    partition_by = partition_columns(write.partitioning, target.label)
    if partition_by and {c.lower() for c in df.columns} <= {c.lower() for c in partition_by}:
        # Spark's own check of a V2 table's partitioning, before Delta's.
        raise DeltaAnalysisException(
            "Cannot use all columns for partition columns", errorClass="ALL_PARTITION_COLUMNS_NOT_ALLOWED"
        )
    options = _delta_options(write)
    given = dict(write.properties or {})
    properties = {k: v for k, v in given.items() if k not in _RESERVED}
    description = given.get(_COMMENT)
    location = given.get(_LOCATION) or options.path
    # A table statement takes neither the writer's userMetadata (delta-spark ignores it) nor a
    # partial overwrite: it writes the whole new table.
    options = replace_options(options, path=None, user_metadata=None, replace_where=None, partition_overwrite_mode="static")
    clustering = list(write.clustering)

    def written(at: str, mode: str, managed: bool) -> None:
        write_dataframe(
            df,
            at,
            mode,
            partition_by or None,
            options,
            properties,
            description,
            _recorded(statement, managed, clustering),
            clustering or None,
            replace_table=mode == "overwrite",
        )

    if target.name is None:
        assert target.location is not None
        if location is not None and normalize_location(location) != target.location:
            raise DeltaAnalysisException(f"{target.label}: a path table takes no other location (given {location})")
        exists = open_table(spark, target.location, options.storage).exists()
        _check_existence(target, statement, exists)
        written(target.location, "errorifexists" if statement == CREATE else "overwrite", managed=False)
        return
    entry = target.entry
    _check_existence(target, statement, entry is not None)
    if entry is not None:
        if not entry.is_delta:
            raise DeltaAnalysisException(
                f"{target.label} exists and is not a Delta table (its provider is {entry.provider!r}); drop it first"
            )
        if location is not None and normalize_location(location) != entry.location:
            raise DeltaAnalysisException(
                f"{target.label} is at {entry.location}, not at the given location {location}",
                errorClass="DELTA_TABLE_LOCATION_MISMATCH",
            )
        written(entry.location, "overwrite", entry.managed)
        return
    assert target.name is not None
    mode = "errorifexists" if statement == CREATE else "overwrite"
    if location is not None:
        at = normalize_location(location)
        written(at, mode, managed=False)
        register(spark, target.name, at, managed=False, comment=description)
        return
    at = default_location(spark, target.name)
    # A managed entry must exist before its directory has files (see catalog.py).
    register(spark, target.name, at, managed=True, schema=df.schema, comment=description)
    try:
        written(at, mode, managed=True)
    except BaseException:
        unregister(spark, target.name)
        raise


def _refuse_another_provider(spark: SparkSession, write: WriteTo, target: Target, statement: str) -> None:
    """A named Delta table replaced without ``using("delta")``: the statement's provider is the
    session's default source, which cannot replace it, as delta-spark refuses (a path table
    ``delta.`/path``` is Delta's whatever the provider)."""
    provider = write.provider or str(spark.conf.get("spark.sql.sources.default", "parquet")).lower()
    if target.name is None or provider == DELTA or statement == CREATE:
        return
    raise DeltaAnalysisException(
        f"The feature is not supported: Table {target.label} does not support {_OPERATIONS[statement]} with "
        f'provider {provider!r} (spark.sql.sources.default): it is a Delta table; add using("delta") to replace it',
        errorClass="UNSUPPORTED_FEATURE.TABLE_OPERATION",
    )


def _check_existence(target: Target, statement: str, exists: bool) -> None:
    if exists and statement == CREATE:
        raise DeltaAnalysisException(
            f"Cannot create table or view {target.label} because it already exists. Choose a different name, "
            "drop or replace the existing object (replace, createOrReplace), or append to it",
            errorClass="TABLE_OR_VIEW_ALREADY_EXISTS",
        )
    if not exists and statement == REPLACE:
        raise DeltaAnalysisException(
            f"The table or view {target.label} cannot be found, so it cannot be replaced; use createOrReplace to create it",
            errorClass="TABLE_OR_VIEW_NOT_FOUND",
        )


def _existing(df: DataFrame, target: Target, options: DeltaOptions) -> tuple[str, Snapshot]:
    """The location and current snapshot of the table a write goes to, which must exist."""
    location = target.entry.location if target.entry is not None else target.location
    assert location is not None
    try:
        return location, open_table(df.sparkSession, location, options.storage).snapshot()
    except TableNotFoundError:
        if target.name is None:
            raise DeltaAnalysisException(f"Path does not exist: {location}.", errorClass="PATH_NOT_FOUND") from None
        raise DeltaAnalysisException(
            f"{target.label} is not a Delta table: its location {location} holds no Delta log",
            errorClass="DELTA_MISSING_DELTA_TABLE",
        ) from None


def append(df: DataFrame, write: WriteTo, target: Target) -> None:
    """``append()``: a blind append, columns matched by name."""
    options = _delta_options(write)
    location, _ = _existing(df, target, options)
    write_dataframe(df, location, "append", None, options)


def overwrite(df: DataFrame, write: WriteTo, target: Target, condition: Column | str) -> None:
    """``overwrite(condition)``: the rows matching ``condition`` are replaced by ``df``'s, which
    must all match it (replaceWhere); a condition that is always true replaces every row."""
    options = _delta_options(write)
    if options.replace_where is not None:
        raise DeltaAnalysisException(
            "You can't use replaceWhere in conjunction with an overwrite by filter", errorClass="DELTA_REPLACE_WHERE_IN_OVERWRITE"
        )
    location, snapshot = _existing(df, target, options)
    predicate = _predicate_sql(df.sparkSession, snapshot, condition, target.label)
    if predicate.lower() != "true":
        options = replace_options(options, replace_where=predicate)
    write_dataframe(df, location, "overwrite", None, options)


def _predicate_sql(spark: SparkSession, snapshot: Snapshot, condition: Column | str, label: str) -> str:
    """``condition`` resolved against the table, as SQL (delta-spark records it so); a string
    is a column name, as pyspark takes it. It must be a boolean predicate."""
    column = F.col(condition) if isinstance(condition, str) else condition
    schema = without_field_metadata(spark_schema(snapshot))
    probe = schema_probe(spark, schema).select(column.alias("condition"))
    data_type = probe.schema.fields[0].dataType  # Spark's analysis: an unknown column fails here
    sql = resolve_condition(spark, column, schema).sql()
    if sql is None:
        raise DeltaAnalysisException(
            f"{label}: the overwrite condition {column} is not a predicate sparkdelta can record as Spark prints it",
            errorClass="DELTA_UNSUPPORTED_OVERWRITE_CONDITION",
        )
    if not isinstance(data_type, BooleanType):
        raise DeltaAnalysisException(
            f"{label}: the overwrite condition {sql} is not a boolean predicate on the table's columns",
            errorClass="DATATYPE_MISMATCH.FILTER_NOT_BOOLEAN",
        )
    return sql


def overwrite_partitions(df: DataFrame, write: WriteTo, target: Target) -> None:
    """``overwritePartitions()``: dynamic partition overwrite (the partitions ``df`` has rows in)."""
    options = _delta_options(write)
    location, _ = _existing(df, target, options)
    write_dataframe(df, location, "overwrite", None, replace_options(options, partition_overwrite_mode="dynamic"))

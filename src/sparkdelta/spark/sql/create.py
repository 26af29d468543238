"""``CREATE TABLE ... USING delta``, which Spark cannot run for a Python provider.

Run by ``sql_runner``: ``CREATE [OR REPLACE] TABLE [IF NOT EXISTS] name [(columns)] USING delta
[PARTITIONED BY (...)] [CLUSTER BY (...)] [LOCATION '...'] [COMMENT '...'] [TBLPROPERTIES (...)]
[AS SELECT ...]``. Spark itself would record the name but never create the Delta log.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructField, _parse_datatype_string
from sqlglot import exp

from ...exceptions import DeltaAnalysisException
from ..catalog import DELTA_PROVIDER, delta_entry, lookup, qualified_name, register
from ..commands.create_table import Identity, TableSpec, column, create_table, with_column
from ..paths import normalize_location
from ..storage import open_table
from ..write_to import CREATE, CREATE_OR_REPLACE, REPLACE, Target, WriteTo, create_or_replace
from .dialect import REPLACE_ONLY, DeltaSpark


def _literal(node: exp.Expression) -> str:
    return node.this if isinstance(node, exp.Literal) else node.sql(dialect=DeltaSpark)


def _properties(create: exp.Create) -> dict[type, list[exp.Expression]]:
    found: dict[type, list[exp.Expression]] = {}
    properties = create.args.get("properties")
    for prop in properties.expressions if properties else []:
        found.setdefault(type(prop), []).append(prop)
    return found


# Clauses of Hive tables: a CREATE TABLE with one of them is Spark's, not a Delta table.
_HIVE_FORMATS = (exp.RowFormatDelimitedProperty, exp.RowFormatSerdeProperty, exp.StorageHandlerProperty)


def is_delta_create(statement: exp.Expression) -> bool:
    """A CREATE TABLE that makes a Delta table: ``USING delta``, or no USING at all (Delta is
    the default format of the book's platform, and ``CLUSTER BY`` only exists for Delta)."""
    if not isinstance(statement, exp.Create) or str(statement.args.get("kind", "")).upper() != "TABLE":
        return False
    if statement.args.get("temporary") or isinstance(statement.this, exp.Table) and statement.args.get("expression") is None:
        return _format(statement) == DELTA_PROVIDER
    return _format(statement) in (DELTA_PROVIDER, None)


def _format(statement: exp.Create) -> str | None:
    properties = _properties(statement)
    formats = properties.get(exp.FileFormatProperty, [])
    if formats:
        return formats[0].this.name.lower()
    return "hive" if any(kind in properties for kind in _HIVE_FORMATS) else None


# The CREATE TABLE clauses this module carries out; any other is refused by name.
_KNOWN_PROPERTIES = (
    exp.FileFormatProperty,
    exp.LocationProperty,
    exp.SchemaCommentProperty,
    exp.PartitionedByProperty,
    exp.ClusterProperty,
    exp.Property,
)


class CreateTableStatement:
    """The parts of a ``CREATE TABLE ... USING delta`` statement."""

    def __init__(self, create: exp.Create) -> None:
        target = create.this
        table = target.this if isinstance(target, exp.Schema) else target
        self.name: str = table.sql(dialect=DeltaSpark)
        self.path: str | None = table.name if table.db.lower() == "delta" and not table.catalog else None
        self.columns: list[exp.ColumnDef] = list(target.expressions) if isinstance(target, exp.Schema) else []
        props = _properties(create)
        self.location: str | None = _literal(props[exp.LocationProperty][0].this) if exp.LocationProperty in props else None
        self.comment: str | None = (
            _literal(props[exp.SchemaCommentProperty][0].this) if exp.SchemaCommentProperty in props else None
        )
        self.partition_by: list[str] = [c.name for p in props.get(exp.PartitionedByProperty, []) for c in p.this.expressions]
        self.cluster_by: list[str] = [
            c.sql(dialect=DeltaSpark).replace("`", "") for p in props.get(exp.ClusterProperty, []) for c in p.expressions
        ]
        self.properties: dict[str, str] = {_literal(p.this): _literal(p.args["value"]) for p in props.get(exp.Property, [])}
        unknown = [p.sql(dialect=DeltaSpark) for kind, found in props.items() if kind not in _KNOWN_PROPERTIES for p in found]
        if unknown:
            raise DeltaAnalysisException(f"{self.name}: unsupported clause(s) in CREATE TABLE: {', '.join(unknown)}")
        self.query: exp.Expression | None = create.args.get("expression")
        self.replace: bool = bool(create.args.get("replace"))
        # ``REPLACE TABLE`` (without ``CREATE OR``): the table must exist.
        self.replace_only: bool = bool(create.meta.get(REPLACE_ONLY))
        self.if_not_exists: bool = bool(create.args.get("exists"))

    @property
    def mode(self) -> str:
        """The create mode this statement means."""
        if self.replace:
            return "replace" if self.replace_only else "createOrReplace"
        return "createIfNotExists" if self.if_not_exists else "create"


def _identity(kind: exp.GeneratedAsIdentityColumnConstraint, name: str) -> Identity:
    """``GENERATED ALWAYS | BY DEFAULT AS IDENTITY [(START WITH n] [INCREMENT BY n)]``; both default to 1."""
    unsupported = [k for k, v in kind.args.items() if k not in ("this", "start", "increment", "on_null") and v]
    if unsupported or kind.args.get("on_null"):
        raise DeltaAnalysisException(f"column {name}: unsupported identity option {kind.sql(dialect='spark')}")

    def number(key: str) -> int:
        node = kind.args.get(key)
        if node is None:
            return 1
        try:
            return int(node.sql(dialect=DeltaSpark))
        except ValueError:
            raise DeltaAnalysisException(f"column {name}: {key.upper()} of an identity column must be an integer") from None

    if number("increment") == 0:  # Spark's parser refuses it, before delta-spark sees the column
        raise DeltaAnalysisException("IDENTITY column step cannot be 0.", errorClass="IDENTITY_COLUMNS_ILLEGAL_STEP")
    return Identity(number("start"), number("increment"), always=bool(kind.this))


def _column(column_def: exp.ColumnDef) -> StructField:
    nullable, generated, comment, identity, default = True, None, None, None, None
    for constraint in column_def.args.get("constraints") or []:
        kind = constraint.args.get("kind")
        if isinstance(kind, exp.NotNullColumnConstraint) and not kind.args.get("allow_null"):
            nullable = False
        elif isinstance(kind, exp.ComputedColumnConstraint):
            generated = kind.this.sql(dialect=DeltaSpark)
        elif isinstance(kind, exp.GeneratedAsIdentityColumnConstraint):
            identity = _identity(kind, column_def.name)
        elif isinstance(kind, exp.CommentColumnConstraint):
            comment = _literal(kind.this)
        elif isinstance(kind, exp.DefaultColumnConstraint):
            default = kind.this.sql(dialect=DeltaSpark)
        else:
            raise DeltaAnalysisException(
                f"column {column_def.name}: unsupported column constraint {constraint.sql(dialect='spark')}"
            )
    data_type = _parse_datatype_string(column_def.args["kind"].sql(dialect=DeltaSpark))
    return column(column_def.name, data_type, nullable, generated, comment, identity, default)


def _columns(fields: Iterable[StructField]) -> tuple[StructField, ...]:
    columns: tuple[StructField, ...] = ()
    for field in fields:
        columns = with_column(columns, field)
    return columns


def _create_as_select(spark: SparkSession, statement: CreateTableStatement, run_sql: Any) -> None:
    """CTAS and RTAS: the table statements of ``df.writeTo`` (``write_to.py``), in one commit as
    delta-spark makes them, a replace making a new table (a new id) as delta-spark's does."""
    assert statement.query is not None
    df: DataFrame = run_sql(spark, statement.query.sql(dialect=DeltaSpark))
    if statement.path is not None:
        target = Target(normalize_location(statement.path), None, None)
    else:
        target = Target(None, qualified_name(spark, statement.name), lookup(spark, statement.name))
    exists = open_table(spark, target.location).exists() if target.location is not None else target.entry is not None
    if statement.if_not_exists and exists:
        return
    properties = dict(statement.properties)
    if statement.comment is not None:
        properties["comment"] = statement.comment
    if statement.location is not None:
        properties["location"] = statement.location
    write = WriteTo(DELTA_PROVIDER, None, properties, tuple(statement.partition_by), tuple(statement.cluster_by))
    kind = REPLACE if statement.replace_only else CREATE_OR_REPLACE if statement.replace else CREATE
    create_or_replace(df, write, target, kind)


def _create(spark: SparkSession, statement: CreateTableStatement) -> None:

    if not statement.columns:
        # Registering an existing Delta table by its location.
        if statement.location is None or not open_table(spark, statement.location).exists():
            raise DeltaAnalysisException(f"{statement.name}: CREATE TABLE without columns needs a LOCATION holding a Delta table")
        existing = lookup(spark, statement.name)
        if existing is not None:
            if statement.if_not_exists:
                return
            delta_entry(spark, statement.name)
            raise DeltaAnalysisException(f"{existing.name} already exists", errorClass="TABLE_OR_VIEW_ALREADY_EXISTS")
        register(spark, statement.name, normalize_location(statement.location), managed=False)
        return

    if statement.path is not None and statement.location is not None:
        raise DeltaAnalysisException(f"{statement.name}: a path table takes no LOCATION")
    columns = _columns(_column(c) for c in statement.columns)
    spec = TableSpec(
        statement.mode,
        name=statement.name if statement.path is None else None,
        location=statement.path if statement.path is not None else statement.location or None,
        columns=columns,
        partition_columns=tuple(statement.partition_by),
        clustering_columns=tuple(statement.cluster_by),
        properties=statement.properties,
        comment=statement.comment or None,
    )
    create_table(spark, spec)


def run_delta_statement(spark: SparkSession, statement: exp.Expression, run_sql: Any) -> DataFrame:
    """Run a statement ``is_delta_create`` accepted; DDL returns an empty DataFrame, as Spark's does."""
    create = CreateTableStatement(statement)  # type: ignore[arg-type]
    if create.query is not None:
        if create.columns:
            raise DeltaAnalysisException(
                f"{create.name}: CREATE TABLE ... AS SELECT takes its columns from the query; drop the column list"
            )
        _create_as_select(spark, create, run_sql)
    else:
        _create(spark, create)
    return spark.range(0).select()

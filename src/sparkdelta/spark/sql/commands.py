"""Delta's SQL commands, each a thin shell over its command in ``spark/commands`` or the kernel (as its ``DeltaTable`` method is).

DESCRIBE HISTORY / DETAIL / TABLE, SHOW TBLPROPERTIES, VACUUM, OPTIMIZE, REORG, RESTORE,
CONVERT TO DELTA, CLONE and GENERATE. Results have delta-spark's columns.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp

from ...exceptions import DeltaAnalysisException
from ...kernel import Table, TableNotFoundError
from ...kernel.manifest import check_mode, generate
from ...kernel.protocol import supported_features
from .. import catalog
from ..commands import describe
from ..commands.clone import clone_table
from ..commands.convert import convert_to_delta as convert_table
from ..commands.optimize import optimize as optimize_table
from ..commands.optimize import optimize_frame, purge_deletion_vectors
from ..commands.restore import restore as restore_table
from ..commands.restore import restore_frame
from ..commands.vacuum import vacuum as vacuum_table
from ..commands.vacuum import vacuum_frame
from ..read.parquet import spark_schema
from ..storage import open_table
from .dialect import (
    CloneTable,
    ConvertToDelta,
    DeltaSpark,
    DescribeDetail,
    DescribeHistory,
    Generate,
    Optimize,
    Reorg,
    Restore,
    ShowTblProperties,
    Vacuum,
)
from .reads import SparkSql, StatementHandler, delta_location, evaluate, table_name, time_travel_options


def _is_path(table: exp.Table) -> bool:
    return table.db.lower() == "delta" and not table.catalog


def delta_table(spark: SparkSession, table: exp.Table) -> Table:
    """The Delta table a statement names; a clear error when it names none."""
    location = delta_location(spark, table)
    if location is None:
        raise DeltaAnalysisException(f"{table_name(table)} is not a Delta table", errorClass="DELTA_MISSING_DELTA_TABLE")
    found = open_table(spark, location)
    if not found.exists():
        what = found.root if _is_path(table) else f"table {table_name(table)} (at {found.root})"
        raise TableNotFoundError(f"{what} is not a Delta table")
    return found


def _literal(node: exp.Expression | None) -> str | None:
    if node is None:
        return None
    return node.this if isinstance(node, exp.Literal) else node.sql(dialect=DeltaSpark)


def describe_history(spark: SparkSession, statement: DescribeHistory, original_sql: SparkSql) -> DataFrame:
    limit = statement.args.get("limit")
    return describe.history(spark, delta_table(spark, statement.this), int(limit.this) if limit is not None else None)


def describe_detail(spark: SparkSession, statement: DescribeDetail, original_sql: SparkSql) -> DataFrame:
    table = statement.this
    name = None if _is_path(table) else f"spark_catalog.{catalog.delta_entry(spark, table_name(table)).name}"
    return describe.detail(spark, delta_table(spark, table), name)


def describe_table(spark: SparkSession, statement: exp.Describe) -> DataFrame:
    """``DESCRIBE TABLE``: the snapshot's columns, then its partitioning, as Spark lays it out."""
    table: exp.Table = statement.this
    for clause in ("style", "partition", "format", "expressions"):
        if statement.args.get(clause):
            raise DeltaAnalysisException(
                f"DESCRIBE {table_name(table)}: {clause.upper()} {statement.args[clause]} is not supported on a Delta "
                "table; DESCRIBE DETAIL and DESCRIBE HISTORY tell the rest"
            )
    snapshot = open_table(spark, delta_location(spark, table) or "").snapshot()
    rows = [(f.name, f.dataType.simpleString(), f.metadata.get("comment")) for f in spark_schema(snapshot).fields]
    if snapshot.partition_columns:
        types = {r[0]: r[1] for r in rows}
        rows += [("# Partition Information", "", ""), ("# col_name", "data_type", "comment")]
        rows += [(c, types[c], None) for c in snapshot.partition_columns]
    return spark.createDataFrame(rows, "col_name string, data_type string, comment string")


def show_tblproperties(spark: SparkSession, statement: ShowTblProperties, original_sql: SparkSql) -> DataFrame:
    """The table's properties with its protocol, as delta-spark lists them."""
    snapshot = delta_table(spark, statement.this).snapshot()
    protocol = snapshot.protocol
    properties = dict(snapshot.configuration)
    properties["delta.minReaderVersion"] = str(protocol.min_reader_version)
    properties["delta.minWriterVersion"] = str(protocol.min_writer_version)
    if protocol.min_writer_version >= 7:
        properties.update({f"delta.feature.{f}": "supported" for f in supported_features(protocol)})
    key = _literal(statement.args.get("key"))
    rows = sorted(properties.items()) if key is None else [(key, properties.get(key, f"Table does not have property: {key}"))]
    return spark.createDataFrame(rows, "key string, value string")


def vacuum(spark: SparkSession, statement: Vacuum, original_sql: SparkSql) -> DataFrame:
    hours = statement.args.get("retain_hours")
    table = delta_table(spark, statement.this)
    retention = float(hours.this) if hours is not None else None
    return vacuum_frame(spark, vacuum_table(spark, table, retention, dry_run=bool(statement.args.get("dry_run"))))


def _where_text(statement: Optimize | Reorg) -> str | None:
    """The WHERE predicate as the statement wrote it: delta-spark parses and records that text."""
    where_text = statement.args.get("where_text")
    return where_text.this if where_text is not None else None


def optimize(spark: SparkSession, statement: Optimize, original_sql: SparkSql) -> DataFrame:
    table = delta_table(spark, statement.this)
    zorder = statement.args.get("zorder")
    columns = tuple(c.sql(dialect=DeltaSpark).replace("`", "") for c in zorder or [])
    return optimize_frame(spark, optimize_table(spark, table, _where_text(statement), columns))


def reorg(spark: SparkSession, statement: Reorg, original_sql: SparkSql) -> DataFrame:
    table = delta_table(spark, statement.this)
    return optimize_frame(spark, purge_deletion_vectors(spark, table, _where_text(statement)))


def restore(spark: SparkSession, statement: Restore, original_sql: SparkSql) -> DataFrame:
    table = delta_table(spark, statement.this)
    value = statement.args["expression"]
    if statement.args["kind"] == "VERSION":
        return restore_frame(spark, restore_table(spark, table, version=int(evaluate(spark, value, original_sql))))
    moment = value.this if isinstance(value, exp.Literal) and value.is_string else evaluate(spark, value, original_sql)
    return restore_frame(spark, restore_table(spark, table, timestamp=moment))


def convert_to_delta(spark: SparkSession, statement: ConvertToDelta, original_sql: SparkSql) -> DataFrame:
    if statement.args.get("no_statistics"):
        raise DeltaAnalysisException("CONVERT TO DELTA ... NO STATISTICS is not supported: sparkdelta always collects statistics")
    source = statement.this
    if source.db.lower() != "parquet":
        raise DeltaAnalysisException(f"CONVERT TO DELTA takes parquet.`/path`, not {source.sql(dialect='spark')}")
    partitions = statement.args.get("partitions")
    schema = ", ".join(c.sql(dialect=DeltaSpark) for c in partitions) if partitions else None
    convert_table(spark, open_table(spark, source.name), schema)
    return spark.range(0).select()


def generate_manifest(spark: SparkSession, statement: Generate, original_sql: SparkSql) -> DataFrame:
    """``GENERATE mode FOR TABLE t``: the mode is checked before the table, as delta-spark does; no rows."""
    mode: exp.Identifier = statement.args["mode"]
    check_mode(mode.name)
    generate(delta_table(spark, statement.this), mode.name)
    return spark.range(0).select()


def clone(spark: SparkSession, statement: CloneTable, original_sql: SparkSql) -> DataFrame:
    """``CREATE [OR REPLACE] TABLE target [SHALLOW|DEEP] CLONE source [VERSION AS OF n] [TBLPROPERTIES] [LOCATION]``."""
    source_ref: exp.Table = statement.args["source"]
    source = delta_table(spark, source_ref)
    options = time_travel_options(spark, source_ref, original_sql)
    properties: dict[str, str] = {}
    location = None
    props = statement.args.get("properties")
    for prop in props.expressions if props is not None else []:
        if isinstance(prop, exp.LocationProperty):
            location = _literal(prop.this)
        elif isinstance(prop, exp.Property):
            properties[str(_literal(prop.this))] = str(_literal(prop.args["value"]))
        else:
            raise DeltaAnalysisException(f"CLONE: unsupported clause {prop.sql(dialect='spark')}")
    target_ref: exp.Table = statement.this
    is_path = _is_path(target_ref)
    target = target_ref.name if is_path else table_name(target_ref)
    if statement.args.get("exists") and (
        open_table(spark, target).exists() if is_path else catalog.lookup(spark, target) is not None
    ):
        return spark.range(0).select()
    shallow, replace = bool(statement.args.get("shallow")), bool(statement.args.get("replace"))
    destination = location if location is not None and not is_path else target
    version = options.version_as_of
    timestamp = str(options.timestamp_as_of) if version is None and options.timestamp_as_of is not None else None
    clone_table(spark, source, destination, shallow, version, timestamp, replace, properties or None)
    if location is not None and not is_path:
        catalog.register(spark, target, Table(location).root, managed=False)
    return spark.range(0).select()


HANDLERS: dict[type[exp.Expression], StatementHandler] = {
    DescribeHistory: describe_history,
    DescribeDetail: describe_detail,
    ShowTblProperties: show_tblproperties,
    Vacuum: vacuum,
    Optimize: optimize,
    Reorg: reorg,
    Restore: restore,
    ConvertToDelta: convert_to_delta,
    CloneTable: clone,
    Generate: generate_manifest,
}

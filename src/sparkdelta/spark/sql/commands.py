"""Delta's SQL commands, each run through the same code as its ``DeltaTable`` method.

DESCRIBE HISTORY / DETAIL / TABLE, SHOW TBLPROPERTIES, VACUUM, OPTIMIZE, REORG, RESTORE,
CONVERT TO DELTA and CLONE. Results have delta-spark's columns.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp

from ...exceptions import DeltaAnalysisException
from ...kernel import Table
from ...kernel.protocol import supported_features
from ...tables import DeltaTable
from .. import catalog
from ..commands.optimize import purge_deletion_vectors
from ..read.parquet import spark_schema
from ..storage import open_table
from .dialect import (
    CloneTable,
    ConvertToDelta,
    DeltaSpark,
    DescribeDetail,
    DescribeHistory,
    Optimize,
    Reorg,
    Restore,
    ShowTblProperties,
    Vacuum,
)
from .reads import SparkSql, delta_location, evaluate, table_name, time_travel_options


def delta_table(spark: SparkSession, table: exp.Table) -> DeltaTable:
    """The Delta table a statement names; a clear error when it names none."""
    location = delta_location(spark, table)
    if location is None:
        raise DeltaAnalysisException(f"{table_name(table)} is not a Delta table", errorClass="DELTA_MISSING_DELTA_TABLE")
    if table.db.lower() == "delta" and not table.catalog:
        return DeltaTable.forPath(spark, location)
    return DeltaTable.forName(spark, table_name(table))


def _literal(node: exp.Expression | None) -> str | None:
    if node is None:
        return None
    return node.this if isinstance(node, exp.Literal) else node.sql(dialect=DeltaSpark)


def describe_history(spark: SparkSession, statement: DescribeHistory, original_sql: SparkSql) -> DataFrame:
    limit = statement.args.get("limit")
    return delta_table(spark, statement.this).history(int(limit.this) if limit is not None else None)


def describe_detail(spark: SparkSession, statement: DescribeDetail, original_sql: SparkSql) -> DataFrame:
    return delta_table(spark, statement.this).detail()


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
    snapshot = delta_table(spark, statement.this)._table.snapshot()
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
    return delta_table(spark, statement.this).vacuum(
        float(hours.this) if hours is not None else None, dryRun=bool(statement.args.get("dry_run"))
    )


def optimize(spark: SparkSession, statement: Optimize, original_sql: SparkSql) -> DataFrame:
    builder = delta_table(spark, statement.this).optimize()
    where = statement.args.get("where")
    if where is not None:
        builder = builder.where(where.sql(dialect=DeltaSpark))
    zorder = statement.args.get("zorder")
    if zorder:
        return builder.executeZOrderBy(*[c.sql(dialect=DeltaSpark).replace("`", "") for c in zorder])
    return builder.executeCompaction()


def reorg(spark: SparkSession, statement: Reorg, original_sql: SparkSql) -> DataFrame:

    where = statement.args.get("where")
    table = delta_table(spark, statement.this)
    return purge_deletion_vectors(spark, table._table, where.sql(dialect=DeltaSpark) if where is not None else None)


def restore(spark: SparkSession, statement: Restore, original_sql: SparkSql) -> DataFrame:
    table = delta_table(spark, statement.this)
    value = statement.args["expression"]
    if statement.args["kind"] == "VERSION":
        return table.restoreToVersion(int(evaluate(spark, value, original_sql)))
    moment = value.this if isinstance(value, exp.Literal) and value.is_string else evaluate(spark, value, original_sql)
    return table.restoreToTimestamp(moment)


def convert_to_delta(spark: SparkSession, statement: ConvertToDelta, original_sql: SparkSql) -> DataFrame:
    if statement.args.get("no_statistics"):
        raise DeltaAnalysisException("CONVERT TO DELTA ... NO STATISTICS is not supported: sparkdelta always collects statistics")
    source = statement.this
    if source.db.lower() != "parquet":
        raise DeltaAnalysisException(f"CONVERT TO DELTA takes parquet.`/path`, not {source.sql(dialect='spark')}")
    partitions = statement.args.get("partitions")
    schema = ", ".join(c.sql(dialect=DeltaSpark) for c in partitions) if partitions else None
    DeltaTable.convertToDelta(spark, f"parquet.`{source.name}`", schema)
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
    is_path = target_ref.db.lower() == "delta" and not target_ref.catalog
    target = target_ref.name if is_path else table_name(target_ref)
    if statement.args.get("exists") and (
        open_table(spark, target).exists() if is_path else catalog.lookup(spark, target) is not None
    ):
        return spark.range(0).select()
    shallow, replace = bool(statement.args.get("shallow")), bool(statement.args.get("replace"))
    clone_args: dict[str, Any] = {"isShallow": shallow, "replace": replace, "properties": properties or None}
    destination = location if location is not None and not is_path else target
    if options.version_as_of is not None:
        source.cloneAtVersion(options.version_as_of, destination, **clone_args)
    elif options.timestamp_as_of is not None:
        source.cloneAtTimestamp(str(options.timestamp_as_of), destination, **clone_args)
    else:
        source.clone(destination, **clone_args)
    if location is not None and not is_path:
        catalog.register(spark, target, Table(location).root, managed=False)
    return spark.range(0).select()


HANDLERS = {
    DescribeHistory: describe_history,
    DescribeDetail: describe_detail,
    ShowTblProperties: show_tblproperties,
    Vacuum: vacuum,
    Optimize: optimize,
    Reorg: reorg,
    Restore: restore,
    ConvertToDelta: convert_to_delta,
    CloneTable: clone,
}

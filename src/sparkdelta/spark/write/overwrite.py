"""Which files a partial overwrite replaces: ``replaceWhere`` and dynamic partition overwrite."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp

from ...kernel import Snapshot
from ...kernel.scan import PARTITION_VALUES, partition_keys, typed_partitions
from ..read.parquet import read_files
from ..read.predicates import condition_predicate, table_schema

_PATH = "__sparkdelta_path"


def _partition_frame(spark: SparkSession, files: pa.Table) -> DataFrame:
    """One row per scan file: its path and typed partition values."""
    values = pa.Table.from_struct_array(files.column(PARTITION_VALUES))
    return spark.createDataFrame(values.append_column(_PATH, files.column("path")))


def _may_match(spark: SparkSession, snapshot: Snapshot, predicate: str) -> pa.Table:
    """Scan files data skipping cannot rule out for ``predicate``."""
    parsed = condition_predicate(spark, table_schema(snapshot), predicate)
    return snapshot.scan(parsed).files


def _only_partition_columns(predicate: str, partition_columns: tuple[str, ...]) -> bool:
    """Whether ``predicate`` reads partition columns only (then it selects whole files)."""
    try:
        parsed = sqlglot.parse_one(predicate, read="spark")
    except sqlglot.errors.ParseError:
        return False
    names = {c.name.lower() for c in parsed.find_all(exp.Column)}
    return bool(names) and names <= {c.lower() for c in partition_columns}


def files_to_replace(spark: SparkSession, snapshot: Snapshot, predicate: str) -> tuple[pa.Table, DataFrame | None]:
    """The files ``replaceWhere`` removes, and the rows of theirs to keep (None if none).

    A predicate on partition columns selects whole files exactly. A predicate on data
    columns deletes the matching rows, as delta-spark does: every file that may hold one
    (after data skipping) is rewritten without them.
    """
    if snapshot.partition_columns and _only_partition_columns(predicate, snapshot.partition_columns):
        files = snapshot.scan().files
        matching = _partition_frame(spark, files).where(predicate).select(_PATH).collect()
        paths = pa.array([r[0] for r in matching], pa.string())
        return files.filter(pc.is_in(files.column("path"), value_set=paths)), None
    candidates = _may_match(spark, snapshot, predicate)
    kept = read_files(spark, snapshot, candidates).where(f"NOT ({predicate}) OR ({predicate}) IS NULL")
    return candidates, kept


def files_in_partitions(snapshot: Snapshot, partitions: list[dict[str, str | None]]) -> pa.Table:
    """Scan files whose partition values equal one of ``partitions`` (dynamic partition overwrite).

    ``partitions`` are a writer's, as its adds spell them; they are typed as the log's are.
    """
    written = pa.array([list(p.items()) for p in partitions], pa.map_(pa.string(), pa.string()))
    wanted = partition_keys(typed_partitions(written, snapshot.schema, snapshot.partition_columns))
    files = snapshot.scan().files
    current = partition_keys(files.column(PARTITION_VALUES))
    return files.filter(pc.is_in(current, value_set=pc.unique(wanted)))

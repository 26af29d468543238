"""Which files a partial overwrite replaces: ``replaceWhere`` and dynamic partition overwrite."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp

from ...kernel import Snapshot
from ...kernel import skipping as S
from ...kernel.partitions import typed_partition_values
from ..read.parquet import read_snapshot, spark_schema, without_field_metadata
from ..read.predicates import condition_predicate, schema_probe

_PATH = "__sparkdelta_path"


def _partition_frame(spark: SparkSession, snapshot: Snapshot) -> DataFrame:
    """One row per file: its path and typed partition values."""
    files = snapshot.files
    values = typed_partition_values(files.column("partitionValues").combine_chunks(), snapshot.schema, snapshot.partition_columns)
    return spark.createDataFrame(values.append_column(_PATH, files.column("path")))


def _may_match(spark: SparkSession, snapshot: Snapshot, predicate: str) -> pa.Table:
    """Files data skipping cannot rule out for ``predicate``."""
    parsed = condition_predicate(schema_probe(spark, without_field_metadata(spark_schema(snapshot))), predicate)
    if parsed is None:
        return snapshot.files
    evaluator = S.SkippingEvaluator(snapshot.files, snapshot.schema, snapshot.partition_columns)
    return snapshot.files.filter(evaluator.keep(parsed))


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
        matching = _partition_frame(spark, snapshot).where(predicate).select(_PATH).collect()
        paths = pa.array([r[0] for r in matching], pa.string())
        return snapshot.files.filter(pc.is_in(snapshot.files.column("path"), value_set=paths)), None
    candidates = _may_match(spark, snapshot, predicate)
    kept = read_snapshot(spark, snapshot, candidates).where(f"NOT ({predicate}) OR ({predicate}) IS NULL")
    return candidates, kept


def _partition_keys(values: pa.Array, snapshot: Snapshot) -> pa.Array:
    """One comparable string per file from its typed partition values (null spelled apart from any value).

    Typed, so that spellings of one value (``2024-01-01 00:00:00`` and
    ``2024-01-01T00:00:00.000000Z``, or keys by display and by physical name) match.
    """
    typed = typed_partition_values(values, snapshot.schema, snapshot.partition_columns)
    parts = [pc.fill_null(pc.binary_join_element_wise("=", pc.cast(c, pa.string()), ""), "\x00") for c in typed.columns]
    return pc.binary_join_element_wise(*parts, "\x01") if parts else pa.array([""] * len(values))


def files_in_partitions(snapshot: Snapshot, partitions: list[dict[str, str | None]]) -> pa.Table:
    """Files whose partition values equal one of ``partitions`` (dynamic partition overwrite)."""
    written = pa.array([list(p.items()) for p in partitions], pa.map_(pa.string(), pa.string()))
    wanted = _partition_keys(written, snapshot)
    current = _partition_keys(snapshot.files.column("partitionValues").combine_chunks(), snapshot)
    return snapshot.files.filter(pc.is_in(current, value_set=pc.unique(wanted)))

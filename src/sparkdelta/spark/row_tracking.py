"""Row tracking in Spark rows: each row's stable id and commit version, read and preserved.

On a table with row tracking enabled (``kernel/row_tracking.py``), a row's stable id is its
file's materialized id column where not null, else the file's ``baseRowId`` plus the row's
position; its commit version is the materialized version column where not null, else the
file's ``defaultRowCommitVersion``. Rewrites (DELETE, UPDATE and MERGE without deletion
vectors, OPTIMIZE) read both as ``ROW_ID`` and ``ROW_COMMIT_VERSION`` and write them to the
materialized columns: a copied row keeps both, an updated row keeps its id and gets the
commit's version (a null version), an inserted row gets fresh ones (both null).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from ..kernel import Metadata, Snapshot
from ..kernel import row_tracking as kernel
from ..kernel.features import is_true
from .read.parquet import ROW_INDEX_COLUMN, read_files

ROW_ID = "__sparkdelta_row_id"
ROW_COMMIT_VERSION = "__sparkdelta_row_commit_version"
COLUMNS = (ROW_ID, ROW_COMMIT_VERSION)
_BASE_ROW_ID = "__sparkdelta_base_row_id"
_DEFAULT_VERSION = "__sparkdelta_default_row_commit_version"


def preserves(snapshot: Snapshot) -> bool:
    """Whether rewrites of ``snapshot``'s rows must keep their ids and versions."""
    return kernel.is_enabled(snapshot.protocol, snapshot.metadata)


def commit_tags(snapshot: Snapshot) -> dict[str, str]:
    """The tag delta-spark puts on a rewrite of a table with row tracking enabled: every copied
    or updated row kept its id (and a copied one its version)."""
    return {kernel.PRESERVED_TAG: "true"} if preserves(snapshot) else {}


def read_with_row_tracking(
    spark: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    file_columns: Sequence[str] = (),
    with_row_index: bool = False,
) -> DataFrame:
    """``read_files`` of ``files`` plus each row's ``ROW_ID`` and ``ROW_COMMIT_VERSION``."""
    id_column, version_column = kernel.materialized_columns(snapshot.metadata)
    hidden = [StructField(id_column, LongType()), StructField(version_column, LongType())]
    labelled = files.append_column(_BASE_ROW_ID, files.column("baseRowId")).append_column(
        _DEFAULT_VERSION, files.column("defaultRowCommitVersion")
    )
    columns = [*file_columns, _BASE_ROW_ID, _DEFAULT_VERSION]
    rows = read_files(spark, snapshot, labelled, extra_fields=hidden, file_columns=columns, with_row_index=True)
    if not files.num_rows:  # an empty read has no row index column
        rows = rows.withColumn(ROW_INDEX_COLUMN, F.lit(None).cast("long"))
    stable = {
        ROW_ID: F.coalesce(F.col(f"`{id_column}`"), F.col(_BASE_ROW_ID) + F.col(ROW_INDEX_COLUMN)),
        ROW_COMMIT_VERSION: F.coalesce(F.col(f"`{version_column}`"), F.col(_DEFAULT_VERSION)),
    }
    dropped = [id_column, version_column, _BASE_ROW_ID, _DEFAULT_VERSION] + ([] if with_row_index else [ROW_INDEX_COLUMN])
    return rows.withColumns(stable).drop(*dropped)


def updated(rows: DataFrame, where: Column | None = None) -> DataFrame:
    """``rows`` (with ``COLUMNS``) as updated versions where ``where`` holds (all if None): ids kept,
    versions left to the commit's."""
    fresh = F.lit(None).cast("long")
    version = fresh if where is None else F.when(where, fresh).otherwise(F.col(ROW_COMMIT_VERSION))
    return rows.withColumn(ROW_COMMIT_VERSION, version)


def materialized(rows: DataFrame, schema: StructType, metadata: Metadata) -> tuple[DataFrame, StructType]:
    """``rows`` and the write ``schema`` with ``COLUMNS`` renamed to the table's materialized columns,
    where row tracking is on and the rows carry them; otherwise as given."""
    if not is_true(metadata.configuration, kernel.ENABLE) or not set(COLUMNS) <= set(rows.columns):
        return rows, schema
    id_column, version_column = kernel.materialized_columns(metadata)
    renamed = rows.withColumnsRenamed({ROW_ID: id_column, ROW_COMMIT_VERSION: version_column})
    extended = StructType([*schema.fields, StructField(id_column, LongType()), StructField(version_column, LongType())])
    return renamed, extended

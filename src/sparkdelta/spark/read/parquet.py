"""Reading a Delta snapshot as a Spark DataFrame with Spark's native Parquet reader.

The kernel names the files; Spark scans them directly (column pruning, vectorized
decoding, row-group skipping), with glob expansion off: the names are literal, and
partition values may hold ``[``, ``{``, ``*``, ``?`` or ``\\``. Partition values come
from the log: when the table is partitioned, each row's file (``_metadata.file_path``)
is joined to a small broadcast table of typed partition values. The join is an outer one
that fails loudly if a file's path, as Spark spells it, matches no entry, so a path
spelling mismatch can never drop rows silently. Column-mapped tables are read by
physical name and renamed to the logical schema.

Joins here name their keys by condition, never by ``USING`` columns: Spark keeps the
scan's hidden ``_metadata`` column visible through a projection or a condition join, but
a USING join's projection hides it. So ``_metadata.file_path`` and the rest resolve on a
read of a partitioned, column-mapped or deletion-vector table as on a plain one.

Deletion vectors are applied by row index. Rows of files that carry one get a file number
from their ``_metadata.file_path`` (loudly, as for partition values), then an anti join on
(file number, ``_metadata.row_index``) drops the rows their DVs delete. The DVs are
expanded on the executors (``mapInArrow`` over one descriptor row per file), so the
driver never holds deleted row indexes. Files without a DV are scanned in the same
relation (a union would lose ``_metadata``); their rows skip the joins by a null key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from ...kernel import Snapshot
from ...kernel.file_actions import file_paths
from ...kernel.scan import DELETION_VECTOR, PARTITION_VALUES
from ..paths import absolute_paths, is_object_store, read_path, scan_options, spark_file_uris, spark_lists
from ..projection import quote, select_as, with_field_metadata
from ..pyspark_classes import is_connect
from ..server_paths import check_server_sees
from ..worker.deletion_vectors import DELETED_FILE_ID, DELETED_WORD, MASK
from .deletion_vectors import deleted_words
from .field_metadata import read_schema

# Reader features this engine implements on top of the kernel's log replay.
ENGINE_READER_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "vacuumProtocolCheck",
        "typeWidening",
        "typeWidening-preview",
        "v2Checkpoint",
        "variantType",
        "variantType-preview",
    }
)

_FILE_KEY = "__sparkdelta_file"
_LOOKUP_KEY = "__sparkdelta_lookup_file"  # the key on a lookup's side of a join
# A row's position in its data file, for DML (see ``read_files``).
ROW_INDEX_COLUMN = "__sparkdelta_row_index"
_MATCHED = "__sparkdelta_matched"
_FILE_ID = "__sparkdelta_file_id"
_DV_KEY = "__sparkdelta_dv_file"  # a row's file path where its file may have a DV, else null
_ROW_INDEX = "__sparkdelta_row_index"
# A row's 64-row word in its file (row index >> 6), joined to the words DVs delete.
_WORD = "__sparkdelta_word"
# Scans that list folders instead of naming each file (``_listing_folders``): on an object
# store up to this many files, picked from the listing by an IN list of names (longer
# lists cost more to parse than the lookups they save)...
_LISTED_SCAN_MAX_FILES = 1000
# ...on local disk from this many, when each listed folder holds this many of them on average.
_LISTED_SCAN_MIN_LOCAL_FILES = 1000
_FILES_PER_LISTED_FOLDER = 50


def spark_schema(snapshot: Snapshot) -> StructType:
    """The table's logical schema as a Spark type (Delta's JSON is Spark's)."""
    return StructType.fromJson(snapshot.schema.to_json())


def _column_mapping_mode(snapshot: Snapshot) -> str:
    return snapshot.configuration.get("delta.columnMapping.mode", "none")


def _physical(data_type: DataType) -> DataType:
    """The same type with every struct field renamed to its physical name."""
    if isinstance(data_type, StructType):
        return StructType(
            [
                StructField(
                    f.metadata.get("delta.columnMapping.physicalName", f.name), _physical(f.dataType), f.nullable, f.metadata
                )
                for f in data_type.fields
            ]
        )
    if isinstance(data_type, ArrayType):
        return ArrayType(_physical(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, MapType):
        return MapType(_physical(data_type.keyType), _physical(data_type.valueType), data_type.valueContainsNull)
    return data_type


def _physical_field(field: StructField) -> StructField:
    renamed = _physical(StructType([field]))
    assert isinstance(renamed, StructType)
    return renamed.fields[0]


def without_field_metadata(data_type: StructType) -> StructType:
    return StructType([StructField(f.name, f.dataType, f.nullable) for f in data_type.fields])


def read_snapshot(spark: SparkSession, snapshot: Snapshot, files: pa.Table | None = None) -> DataFrame:
    """Rows of ``snapshot`` (only of ``files``, rows of a scan's files, when given): data from Parquet,
    partition values from the log."""
    return read_files(spark, snapshot, snapshot.scan().files if files is None else files)


def read_files(
    spark: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    extra_fields: Sequence[StructField] = (),
    file_columns: Sequence[str] = (),
    with_row_index: bool = False,
) -> DataFrame:
    """Rows of ``files`` under ``snapshot``'s schema.

    ``files`` are in a kernel scan's layout: rows of ``snapshot.scan(...).files``, or file
    actions (add, remove or cdc) passed through ``kernel.scan.scan_files``.

    ``extra_fields`` are more columns to read from the data files (``_change_type`` of
    change data files); ``file_columns`` are columns of ``files`` given to each row of
    that file (a change's version and timestamp). Both follow the table's columns, and
    then, if ``with_row_index``, each row's position in its file (``ROW_INDEX_COLUMN``),
    which with a file column of ``path`` addresses a row for DML.
    """
    snapshot.require_readable(ENGINE_READER_FEATURES)
    if files.num_rows:
        check_server_sees(spark, snapshot)
    logged = spark_schema(snapshot)
    schema = read_schema(logged)  # the field metadata reads show, on the scan's fields or by alias
    partition_names = {c.lower() for c in snapshot.partition_columns}
    data_fields = [f for f in schema.fields if f.name.lower() not in partition_names]
    mapped = _column_mapping_mode(snapshot) != "none"
    physical_fields = {f.name: _physical_field(f) for f in logged.fields} if mapped else {}
    read_fields = [physical_fields[f.name] if mapped else f for f in data_fields] + list(extra_fields)
    output = [*schema.fields, *extra_fields]

    if files.num_rows == 0:
        labels = from_arrow_schema(files.select(list(file_columns)).schema).fields if file_columns else []
        return spark.createDataFrame([], StructType([*output, *labels]))
    missing = [name for name in (DELETION_VECTOR, PARTITION_VALUES) if name not in files.column_names]
    if missing:
        raise ValueError(
            f"{snapshot}: the files to read lack the {', '.join(missing)} column(s); pass rows of snapshot.scan().files"
        )
    root = snapshot.table_root
    has_dv = files.column(DELETION_VECTOR).is_valid()
    need_lookup = bool(snapshot.partition_columns or file_columns)
    if not mapped and not need_lookup and not with_row_index and not pc.any(has_dv).as_py():
        return _scan(spark, snapshot, files, read_fields)  # already the table's names, types and order
    data = _scan_without_deleted_rows(spark, snapshot, files, read_fields, has_dv, need_lookup, with_row_index)
    # Each output column's source and cast: renaming nested physical names needs a cast;
    # otherwise the scan already has the table's types and the read's field metadata.
    sources: dict[str, tuple[str, DataType | None]] = {
        logical.name: (physical.name, logical.dataType if mapped else None)
        for logical, physical in zip([*data_fields, *extra_fields], read_fields, strict=True)
    }
    partitions = [f for f in schema.fields if f.name.lower() in partition_names]
    if need_lookup:
        keys = _file_keys(root, files)
        values = pa.Table.from_struct_array(files.column(PARTITION_VALUES))
        for name in file_columns:
            values = values.append_column(name, files.column(name))
        values = values.append_column(_MATCHED, pa.repeat(True, files.num_rows))
        lookup = select_as(
            spark.createDataFrame(values.append_column(_LOOKUP_KEY, keys)),
            [
                (_LOOKUP_KEY, _LOOKUP_KEY, None),
                (_MATCHED, _MATCHED, None),
                *[(f.name, f.name, f.dataType) for f in partitions],
                *[(name, name, None) for name in file_columns],
            ],
        )
        data = data.join(F.broadcast(lookup), F.col(_FILE_KEY) == F.col(_LOOKUP_KEY), "left")
        unmatched = F.raise_error(
            F.concat(
                F.lit("sparkdelta: Spark read data file "),
                F.col(_FILE_KEY),
                F.lit(
                    f", which matches no file of {root} version {snapshot.version} in the log: its partition values are unknown"
                ),
            )
        )
        checked = [f.name for f in partitions] + list(file_columns)
        no_match = F.col(_MATCHED).isNull()
        data = data.withColumns({name: F.when(no_match, unmatched).otherwise(data[quote(name)]) for name in checked})
        sources.update({f.name: (f.name, None) for f in partitions})  # the file columns follow the table's
    row_index: list[tuple[str, str, DataType | None]] = [(ROW_INDEX_COLUMN, _ROW_INDEX, None)] if with_row_index else []
    passed: list[tuple[str, str, DataType | None]] = [(name, name, None) for name in file_columns]
    columns = [(f.name, *sources[f.name]) for f in output] + passed + row_index
    read = select_as(data, columns)
    # The field metadata the casts of column mapping and the partition values' lookup left out.
    relabelled = {f.name for f in partitions} | ({f.name for f in [*data_fields, *extra_fields]} if mapped else set())
    metadata = {f.name: f.metadata for f in output if f.metadata and f.name in relabelled}
    return with_field_metadata(read, [name for name, _, _ in columns], metadata)


def _file_keys(root: str, files: pa.Table) -> pa.Array:
    """Each file's path as Spark spells ``_metadata.file_path``."""
    return pa.array(spark_file_uris(root, file_paths(files)), pa.string())


def _scan(spark: SparkSession, snapshot: Snapshot, files: pa.Table, read_fields: list[StructField]) -> DataFrame:
    """Spark's native Parquet scan of exactly ``files``, with the Hadoop options the table was opened with."""
    log_paths = file_paths(files)
    locations = absolute_paths(snapshot.table_root, log_paths)
    reader = spark.read.options(**scan_options(spark), **snapshot.storage.engine_options).schema(StructType(read_fields))
    folders = _listing_folders(snapshot.table_root, locations)
    if folders is not None:
        listed = _scan_listed(spark, reader, snapshot, folders, locations, spark_file_uris(snapshot.table_root, log_paths))
        if listed is not None:
            return listed
    return reader.parquet(*[read_path(spark, location) for location in locations])


def input_file_name(key: str) -> str:
    """A file as ``inputFiles()`` spells it, given its ``_metadata.file_path``: the same URI,
    but local files as ``file:///path`` where the metadata column has ``file:/path``."""
    return "file://" + key[5:] if key.startswith("file:/") and not key.startswith("file://") else key


def _listing_folders(root: str, locations: list[str]) -> list[str] | None:
    """The folders to list instead of naming each file, or None to name them.

    Given each file's path, Spark's file index asks the store about every one: two HEADs
    and a LIST a file on an object store, a file-system lookup each on local disk (100,000
    files: about 10 s on 2 cores, against 3.5 s to list the 20 folders holding them). A
    folder listing returns a thousand names a request. On an object store a scan of up to ``_LISTED_SCAN_MAX_FILES`` lists
    the table's folder; on local disk a scan of at least ``_LISTED_SCAN_MIN_LOCAL_FILES``
    lists the folders holding its files (the outermost, since listings recurse) when there
    are few of them. Only files Spark's listing finds qualify: all under the root, none
    where it skips (names starting ``.``, or ``_`` unless a partition folder), no quotes or
    backslashes (the IN list of ``_scan_listed``).
    """
    object_store = is_object_store(root)
    if len(locations) > _LISTED_SCAN_MAX_FILES if object_store else len(locations) < _LISTED_SCAN_MIN_LOCAL_FILES:
        return None
    prefix = root + "/"
    folders: set[str] = set()
    for location in locations:
        if not location.startswith(prefix) or "'" in location or "\\" in location:
            return None
        folder, _, name = location[len(prefix) :].rpartition("/")
        if name.startswith(("_", ".")) or (folder and not all(spark_lists(f) for f in folder.split("/"))):
            return None
        folders.add(folder)
    if object_store or "" in folders:
        return [root]
    outermost = [f for f in folders if not any("/".join(f.split("/")[:depth]) in folders for depth in range(1, f.count("/") + 1))]
    if len(outermost) * _FILES_PER_LISTED_FOLDER > len(locations):
        return None
    return [f"{prefix}{folder}" for folder in sorted(outermost)]


def _scan_listed(
    spark: SparkSession, reader: DataFrameReader, snapshot: Snapshot, folders: list[str], locations: list[str], keys: list[str]
) -> DataFrame | None:
    """The files at ``locations`` (``keys``: as Spark spells them), found by listing ``folders``.

    When the folders hold other files too (older versions, deletion vectors), a
    ``_metadata.file_path`` filter picks the log's: Spark prunes the listed files by it
    before opening any, though it also checks it on every row read (about 0.1 s per
    million rows here, where a HEAD costs 10-30 ms on S3). A Spark Connect server plans
    the read again at each action, listing the folders anew, so there the filter always
    applies: files written after this read began must stay out of it. Above
    ``_LISTED_SCAN_MAX_FILES`` files that filter is too long, and None says to name the
    files instead. A file the log names that the listing lacks is an error, as a per-file
    read makes it.

    The kernel lists the folders after Spark has (``_spark_listing``), so what Spark
    found is what the kernel found, less files deleted in between, which the check
    catches.
    """
    scanned = reader.parquet(*[read_path(spark, folder) for folder in folders])
    listed = _spark_listing(snapshot, folders)
    missing = [location for location in locations if location not in listed]
    if missing:
        raise FileNotFoundError(
            f"{snapshot.table_root} version {snapshot.version}: {len(missing)} data file(s) the log names are not in "
            f"storage, e.g. {missing[0]} (deleted outside the log, or by a VACUUM with too short a retention?)"
        )
    if len(listed) == len(locations) and not is_connect(scanned.sparkSession):
        return scanned  # the folders hold exactly the log's files, and this plan keeps its listing
    if len(keys) > _LISTED_SCAN_MAX_FILES:
        return None
    names = ", ".join(f"'{key}'" for key in keys)  # _listing_folders left out quotes and backslashes
    return scanned.where(F.expr(f"_metadata.file_path IN ({names})"))


def _spark_listing(snapshot: Snapshot, folders: list[str]) -> set[str]:
    """The files Spark's file index finds under ``folders``: every file at any depth, less
    hidden names (``spark_lists``) and files being copied in."""
    return {
        status.path
        for folder in folders
        for status in snapshot.storage.list_tree(folder, spark_lists)
        if spark_lists(status.name) and not status.name.endswith("._COPYING_")
    }


def _scan_without_deleted_rows(
    spark: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    read_fields: list[StructField],
    has_dv: pa.ChunkedArray,
    keyed: bool,
    with_row_index: bool,
) -> DataFrame:
    """The scan less the rows deletion vectors delete, with each row's file key if ``keyed`` (and row index).

    One relation for all files, so the scan's ``_metadata`` column stays (a union of files
    with and without DVs would hide it). Only rows of files with a DV pay for the DV joins:
    the others' join keys are null (``_scan_dv_files``).
    """
    with_dv = files.filter(has_dv)
    if not with_dv.num_rows:
        scanned = _scan(spark, snapshot, files, read_fields)
        if keyed:
            scanned = scanned.withColumn(_FILE_KEY, F.col("_metadata.file_path"))
        return scanned.withColumn(_ROW_INDEX, F.col("_metadata.row_index")) if with_row_index else scanned
    without_deleted = _scan_dv_files(spark, snapshot, with_dv, files.filter(pc.invert(has_dv)), read_fields)
    if not with_row_index:
        without_deleted = without_deleted.drop(_ROW_INDEX)
    return without_deleted if keyed else without_deleted.drop(_FILE_KEY)


def _scan_dv_files(
    spark: SparkSession, snapshot: Snapshot, files: pa.Table, plain: pa.Table, read_fields: list[StructField]
) -> DataFrame:
    """Rows of ``files`` (each with a DV) and ``plain`` (none), less the deleted ones, with
    their file key and row index.

    Each row's file is numbered through a broadcast lookup of the keys Spark spells (all
    files), which fails loudly on a key it lacks: a spelling mismatch must not keep deleted
    rows. A row of a file whose size only files without a DV have gets a null key instead,
    which the joins skip without hashing a path. The join
    to the deleted words then runs on (file number, word), two longs, compact to
    broadcast, and a row is live unless its bit in its word's mask is set.
    """
    root = snapshot.table_root
    scanned_files = pa.concat_tables([files, plain]) if plain.num_rows else files
    numbers = pa.array(range(scanned_files.num_rows), pa.int64())
    lookup = spark.createDataFrame(pa.table({_LOOKUP_KEY: _file_keys(root, scanned_files), _FILE_ID: numbers}))
    unmatched = F.raise_error(
        F.concat(
            F.lit("sparkdelta: Spark read data file "),
            F.col(_DV_KEY),
            F.lit(f", which matches no file with a deletion vector in {root} version {snapshot.version}"),
        )
    )
    path = F.col("_metadata.file_path")
    # Sizes only files without a DV have: a row of such a size is no DV file's. A DV file whose
    # real size is not its logged one still takes the lookup (unless it has one of these).
    plain_only = set(cast(list[int], plain.column("size").to_pylist())) - set(cast(list[int], files.column("size").to_pylist()))
    gated = bool(plain_only) and len(plain_only) <= _LISTED_SCAN_MAX_FILES  # else the IN list costs more
    dv_key = F.when(~F.col("_metadata.file_size").isin(sorted(plain_only)), path) if gated else path
    scanned = _scan(spark, snapshot, scanned_files, read_fields).withColumns(
        {_FILE_KEY: path, _DV_KEY: dv_key, _ROW_INDEX: F.col("_metadata.row_index")}
    )
    numbered = scanned.join(F.broadcast(lookup), F.col(_DV_KEY) == F.col(_LOOKUP_KEY), "left").withColumns(
        {
            _FILE_ID: F.when(F.col(_DV_KEY).isNotNull() & F.col(_FILE_ID).isNull(), unmatched).otherwise(F.col(_FILE_ID)),
            _WORD: F.shiftright(F.col(_ROW_INDEX), 6),
        }
    )
    deleted = deleted_words(spark, snapshot, files, spark.read.options(**scan_options(spark), **snapshot.storage.engine_options))
    live = F.col(MASK).isNull() | (F.expr(f"shiftright({MASK}, CAST({_ROW_INDEX} & 63 AS INT)) & 1") == 0)
    same_word = (F.col(_FILE_ID) == F.col(DELETED_FILE_ID)) & (F.col(_WORD) == F.col(DELETED_WORD))
    return (
        numbered.drop(_LOOKUP_KEY, _DV_KEY)
        .join(deleted, same_word, "left")
        .where(live)
        .drop(_FILE_ID, _WORD, MASK, DELETED_FILE_ID, DELETED_WORD)
    )

"""The rows deletion vectors delete, as a DataFrame of 64-row words, for the read path's anti join.

The DVs are expanded on the executors, so the client never holds deleted row indexes,
and by code shipped by value (``spark/worker``), so the Spark server needs nothing of
sparkdelta: it sees one row per DV file, with the file's bytes read by Spark's own
``binaryFile`` source (through the server's file systems, with the Hadoop options the
data files are read with), and one row per inline DV, with its data from the log. A DV
file holding the DVs of many data files (delta-spark writes one per task) is read once.

Which DVs each file holds goes with the expanding function, as a lookup of one row per
DV file, which each DV file's row finds by ``_metadata.file_path``, as Spark spells it; a
file Spark read that matches no entry fails the read loudly, since its DVs' deleted rows
would otherwise come back.
"""

from __future__ import annotations

import re
from functools import partial
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

from ...exceptions import DeltaIllegalArgumentException
from ...kernel import Snapshot
from ...kernel.deletion_vectors import DeletionVectorDescriptor, dv_file, inline_data
from ...kernel.errors import DeletionVectorError
from ...kernel.file_actions import file_paths
from ...kernel.scan import DELETION_VECTOR, NUM_RECORDS
from ..paths import read_path, spark_file_uri
from ..worker.deletion_vectors import (
    CONTENT,
    DATA_FILE,
    DELETED_FILE_ID,
    DELETED_WORD,
    DV_FILE,
    DV_KEY,
    ENTRIES,
    ENTRY,
    MASK,
    SIZE,
    expand_read_deletion_vectors,
)

DELETED_WORDS = StructType(
    [
        StructField(DELETED_FILE_ID, LongType(), False),
        StructField(DELETED_WORD, LongType(), False),
        StructField(MASK, LongType(), False),
    ]
)
_SOURCE_ROWS = StructType([StructField(DV_KEY, StringType(), False), StructField(CONTENT, BinaryType(), False)])
_DV_FIELDS = ("storageType", "pathOrInlineDv", "sizeInBytes", "cardinality")
# Per word, what Spark's broadcast hash relation takes (rows of three longs plus the hash entry).
_BROADCAST_BYTES_PER_WORD = 128
# Deleted words are broadcast up to this size even above spark.sql.autoBroadcastJoinThreshold
# (unless that is -1): a sort-merge join shuffles the whole scan and reads ~10x slower.
_DV_BROADCAST_BYTES = 256 << 20
_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def deleted_words(spark: SparkSession, snapshot: Snapshot, files: pa.Table, reader: DataFrameReader) -> DataFrame:
    """(file number, word, mask) of every 64-row word holding rows the DVs of ``files`` delete.

    ``files`` all carry a DV, and are numbered by position. ``reader`` is the one the data
    files are read with (its Hadoop options reach the DV files too). A word per 64 rows,
    rather than a row per deleted row, keeps the join small: at most one entry per deleted
    row, and 64 times fewer when deletions are dense.

    Broadcast when the log's cardinalities say the rows fit Spark's broadcast threshold,
    else a sort-merge join: Spark's own estimate, made from the few descriptor rows,
    would broadcast any size.
    """
    root = snapshot.table_root
    dvs = cast(pa.StructArray, files.column(DELETION_VECTOR).combine_chunks())
    paths = pa.array(file_paths(files), pa.string())
    for name in _DV_FIELDS:
        missing = pc.invert(dvs.field(name).is_valid())
        if pc.any(missing).as_py():
            raise DeletionVectorError(
                f"{root}: malformed deletionVector descriptor of data file {paths.filter(missing)[0]}: no {name}"
            )
    columns: list[pa.Array] = [pa.array(np.arange(len(paths)), pa.int64()), paths]
    columns += [dvs.field(name).cast(pa.int64()) for name in ("offset", "sizeInBytes", "cardinality")]
    entries = pa.StructArray.from_arrays(columns, fields=list(ENTRY))
    inline = pc.equal(dvs.field("storageType"), pa.scalar("i"))
    source, lookup = _inline_sources(spark, root, dvs.filter(inline), entries.filter(inline))
    if not pc.all(inline).as_py():
        stored = pc.invert(inline)
        files_read, files_lookup = _file_sources(spark, root, reader, dvs.filter(stored), entries.filter(stored))
        # The union, with the inline DVs' rows even when there are none, ends binaryFile's hidden
        # ``_metadata`` column (a Union has no metadata output), which would otherwise reach the
        # data rows through the joins and make their own ``_metadata`` ambiguous.
        source = files_read.unionByName(source)
        lookup = pa.concat_tables([files_lookup, lookup])
    unmatched = f"which matches no deletion vector file of {root} version {snapshot.version}"
    deleted = source.mapInArrow(partial(expand_read_deletion_vectors, root, lookup, unmatched), DELETED_WORDS)
    threshold = broadcast_threshold(spark)
    fits = threshold >= 0 and _word_estimate(files) * _BROADCAST_BYTES_PER_WORD <= max(threshold, _DV_BROADCAST_BYTES)
    return deleted.hint("broadcast" if fits else "merge")


def _lookup(keys: list[str], dv_files: pa.Array, entries: pa.ListArray) -> pa.Table:
    """What ``expand_read_deletion_vectors`` finds a source row's DV file and entries in."""
    return pa.table({DV_KEY: pa.array(keys, pa.string()), DV_FILE: dv_files, ENTRIES: entries})


def _inline_sources(spark: SparkSession, root: str, dvs: pa.StructArray, entries: pa.StructArray) -> tuple[DataFrame, pa.Table]:
    """A row per inline DV: a key of its own (a leading space: no file URI has one) and its data, from the log."""
    texts = cast(list[str], dvs.field("pathOrInlineDv").to_pylist())
    sizes = cast(list[int], entries.field(SIZE).to_pylist())
    data_files = cast(list[str], entries.field(DATA_FILE).to_pylist())
    data = [
        inline_data(root, DeletionVectorDescriptor("i", text, None, size, 0), data_file)
        for text, size, data_file in zip(texts, sizes, data_files, strict=True)
    ]
    keys = [f" inline deletion vector {i}" for i in range(len(data))]
    one_each = pa.ListArray.from_arrays(pa.array(np.arange(len(data) + 1), pa.int32()), entries)
    table = pa.table({DV_KEY: pa.array(keys, pa.string()), CONTENT: pa.array(data, pa.binary())})
    rows = spark.createDataFrame(table, _SOURCE_ROWS)  # a Connect session infers no schema from no rows
    return rows, _lookup(keys, pa.nulls(len(data), pa.string()), one_each)


def _file_sources(
    spark: SparkSession, root: str, reader: DataFrameReader, dvs: pa.StructArray, entries: pa.StructArray
) -> tuple[DataFrame, pa.Table]:
    """A row per DV file: the file as Spark spells it and its bytes, as Spark's ``binaryFile`` reads them,
    and the lookup of the entries of its DVs.

    Descriptors naming one file differently (a relative ``u`` and an absolute ``p`` one)
    share its row: Spark must read each file once, or its DVs' words would repeat.
    """
    data_files = cast(list[str], entries.field(DATA_FILE).to_pylist())
    row_of: dict[tuple[str, str], int] = {}  # DV as the log names it -> its file's row
    keys: dict[str, int] = {}  # DV file as Spark spells it -> its row
    locations: list[str] = []
    rows = np.empty(len(entries), np.int64)
    types = cast(list[str], dvs.field("storageType").to_pylist())
    named = zip(types, cast(list[str], dvs.field("pathOrInlineDv").to_pylist()), strict=True)
    for i, (storage_type, where) in enumerate(named):
        row = row_of.get((storage_type, where))
        if row is None:
            descriptor = DeletionVectorDescriptor(storage_type, where, None, 0, 0)
            location = cast(str, dv_file(root, descriptor, data_files[i]))
            row = row_of[storage_type, where] = keys.setdefault(spark_file_uri(location), len(keys))
            if row == len(locations):
                locations.append(location)
        rows[i] = row
    order = np.argsort(rows, kind="stable")
    offsets = np.searchsorted(rows[order], np.arange(len(locations) + 1))
    read = reader.format("binaryFile").load([read_path(spark, location) for location in locations])
    blobs = read.select(F.col("_metadata.file_path").alias(DV_KEY), F.col("content").alias(CONTENT))
    files = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), entries.take(order))
    return blobs, _lookup(list(keys), pa.array(locations, pa.string()), files)


def _word_estimate(files: pa.Table) -> int:
    """An upper bound on the deleted words: per file, its DV's cardinality or a word per 64 rows, whichever is less."""
    cardinality = cast(pa.StructArray, files.column(DELETION_VECTOR).combine_chunks()).field("cardinality").fill_null(0)
    words = pc.add(pc.divide(files.column(NUM_RECORDS), 64), 1)
    return int(pc.sum(pc.min_element_wise(cardinality, pc.coalesce(words, cardinality))).as_py() or 0)


def broadcast_threshold(spark: SparkSession) -> int:
    """``spark.sql.autoBroadcastJoinThreshold`` in bytes (-1: never broadcast)."""
    value = (spark.conf.get("spark.sql.autoBroadcastJoinThreshold") or "10MB").strip().lower()
    match = re.fullmatch(r"(-?\d+)\s*([kmgtp]?)b?", value)
    if match is None:
        raise DeltaIllegalArgumentException(f"spark.sql.autoBroadcastJoinThreshold={value!r} is not a byte size")
    return int(match.group(1)) * _BYTE_UNITS[match.group(2)]

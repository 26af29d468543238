"""A scan: the files of a snapshot a read needs, and what an engine needs to read each one.

Modelled on delta-kernel-rs (``ScanBuilder::with_predicate`` then ``Scan::scan_metadata``)
and the Java kernel's ``ScanBuilder``: the kernel decides which files a predicate cannot
rule out (partition pruning on typed partition values, data skipping on stats), and
hands the engine one row per selected file, columnar. Engines read a file by these
columns, never by parsing the log's encodings (string partition values, stats JSON):

- ``path``, ``size``, ``modificationTime``, ``stats``: as the log has them;
- ``deletionVector``: the file's deletion vector descriptor (``storageType``,
  ``pathOrInlineDv``, ``offset``, ``sizeInBytes``, ``cardinality``), null when it has none;
- ``partition_values``: a struct of the file's partition values, typed by the table
  schema and named by logical column name;
- ``num_records``: the stats' ``numRecords`` (null when unknown).

The add's other fields stay on each row, so actions built from a row (a remove keyed
exactly like its add) keep them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from . import actions as A
from .partitions import typed_partition_values
from .schema import StructType
from .skipping import And, Predicate, SkippingEvaluator
from .stats_schema import read_stats_json

if TYPE_CHECKING:
    from .snapshot import Snapshot

PARTITION_VALUES = "partition_values"
NUM_RECORDS = "num_records"
DELETION_VECTOR = "deletionVector"
_NUM_RECORDS_SCHEMA = pa.schema([("numRecords", pa.int64())])
_LEADING_NUM_RECORDS = r'^\s*\{\s*"numRecords"\s*:\s*(?P<n>\d+)\s*[,}]'


def num_records(stats: pa.Array[Any] | pa.ChunkedArray[Any]) -> pa.Array[Any]:
    """Each file's ``numRecords`` from its stats JSON (null where the stats are missing or lack it).

    The one parser of record counts: scans, and engines counting the files they wrote.
    Writers put ``numRecords`` first, where a regex finds it (5x faster than parsing the
    JSON, which every read of 100,000 files would pay); other stats are parsed whole.
    """
    if len(stats) == 0:
        return pa.array([], pa.int64())
    texts = stats.combine_chunks() if isinstance(stats, pa.ChunkedArray) else stats
    leading = pc.struct_field(pc.extract_regex(texts, _LEADING_NUM_RECORDS), "n")
    counts = pc.cast(leading, pa.int64())
    others = pc.and_(pc.is_valid(texts), pc.is_null(counts))
    if not pc.any(others).as_py():
        return cast("pa.Array[Any]", counts)
    parsed = read_stats_json(texts.filter(others), _NUM_RECORDS_SCHEMA).column("numRecords").combine_chunks()
    return cast("pa.Array[Any]", pc.replace_with_mask(counts, others, parsed))


def _struct(values: pa.Table) -> pa.StructArray:
    """Typed partition values as one struct column (an empty struct per file when unpartitioned)."""
    if values.num_columns == 0:
        return pa.repeat(pa.scalar({}, pa.struct([])), values.num_rows)
    return pa.StructArray.from_arrays([c.combine_chunks() for c in values.columns], names=values.column_names)


def typed_partitions(partition_values: pa.Array[Any], schema: StructType, partition_columns: tuple[str, ...]) -> pa.StructArray:
    """Partition values spelled as the log spells them (a string map per file) as a scan's ``partition_values``."""
    return _struct(typed_partition_values(partition_values, schema, partition_columns))


def _with_scan_columns(files: pa.Table, partitions: pa.StructArray) -> pa.Table:
    """``files`` with ``partition_values`` and ``num_records``, and a ``deletionVector`` descriptor column."""
    dv_missing = DELETION_VECTOR not in files.column_names or pa.types.is_null(files.schema.field(DELETION_VECTOR).type)
    if dv_missing:
        files = files.drop_columns([DELETION_VECTOR]) if DELETION_VECTOR in files.column_names else files
        files = files.append_column(DELETION_VECTOR, pa.nulls(files.num_rows, A.DELETION_VECTOR))
    has_stats = "stats" in files.column_names and not pa.types.is_null(files.schema.field("stats").type)
    records = num_records(files.column("stats")) if has_stats else pa.nulls(files.num_rows, pa.int64())
    return files.append_column(PARTITION_VALUES, partitions).append_column(NUM_RECORDS, records)


def scan_files(actions: pa.Table, schema: StructType, partition_columns: tuple[str, ...]) -> pa.Table:
    """File actions (rows of add, remove or cdc actions, with ``path`` and ``partitionValues``) in a scan's layout.

    For engines reading files a scan did not select, such as the change feed's.
    """
    return _with_scan_columns(
        actions, typed_partitions(actions.column("partitionValues").combine_chunks(), schema, partition_columns)
    )


def partition_keys(partition_values: pa.StructArray | pa.ChunkedArray[Any]) -> pa.Array[Any]:
    """One comparable string per file from its typed ``partition_values`` (null spelled apart from any value).

    Typed, so that spellings of one value (``2024-01-01 00:00:00`` and
    ``2024-01-01T00:00:00.000000Z``, or keys by display and by physical name) match.
    """
    values = pa.Table.from_struct_array(partition_values)
    # (The stubs refuse Python strings among ``binary_join_element_wise``'s values; Arrow takes them as scalars.)
    parts = [
        pc.fill_null(pc.binary_join_element_wise("=", pc.cast(c, pa.string()), ""), "\x00")  # type: ignore[call-overload]
        for c in values.columns
    ]
    return pc.binary_join_element_wise(*parts, "\x01").combine_chunks() if parts else pa.repeat(pa.scalar(""), values.num_rows)


@dataclass(frozen=True)
class ScanMetrics:
    """What a scan kept of its snapshot, for metrics and explain."""

    files_total: int
    files_selected: int
    bytes_total: int
    bytes_selected: int

    @property
    def files_pruned(self) -> int:
        return self.files_total - self.files_selected


class Scan:
    """The files of ``snapshot`` that rows matching ``predicate`` may be in, for reading ``columns``.

    Built by ``Snapshot.scan``. ``predicate`` only prunes: a file is dropped when its
    partition values or stats prove no row of it matches, so the engine still applies
    its filter to the rows read. ``columns`` (logical names; None: all) is the
    projection the engine reads; ``partition_values`` holds the partition columns among
    them. Results are computed on first use and kept.
    """

    def __init__(self, snapshot: Snapshot, predicate: Predicate | None = None, columns: Sequence[str] | None = None) -> None:
        self._snapshot = snapshot
        self._predicate = predicate
        self._schema = _projected(snapshot.schema, columns)

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def predicate(self) -> Predicate | None:
        return self._predicate

    @property
    def schema(self) -> StructType:
        """The logical schema of the columns read (the table's when no projection was given)."""
        return self._schema

    @cached_property
    def _partitions(self) -> pa.Table:
        """Typed values of every partition column, one row per file of the snapshot."""
        files = self._snapshot.files
        return typed_partition_values(
            files.column("partitionValues").combine_chunks(), self._snapshot.schema, self._snapshot.partition_columns
        )

    @cached_property
    def selection(self) -> pa.Array[Any]:
        """One boolean per file of the snapshot (``Snapshot.files`` order): True where the file is selected.

        delta-kernel-rs's selection vector; engines combining several scans' choices use it.
        """
        files = self._snapshot.files
        if self._predicate is None or files.num_rows == 0:
            return pa.repeat(pa.scalar(True), files.num_rows)
        evaluator = SkippingEvaluator(files, self._snapshot.schema, self._snapshot.partition_columns, partitions=self._partitions)
        return evaluator.keep(self._predicate)

    @cached_property
    def files(self) -> pa.Table:
        """The selected files, one row each, in the layout the module docstring describes."""
        files = self._snapshot.files
        partitions = self._partitions.select([f.name for f in self._schema.fields if f.name in self._partitions.column_names])
        if self._predicate is not None:
            files, partitions = files.filter(self.selection), partitions.filter(self.selection)
        return _with_scan_columns(files, _struct(partitions))

    @cached_property
    def metrics(self) -> ScanMetrics:
        sizes = self._snapshot.files.column("size").combine_chunks()
        return ScanMetrics(
            files_total=len(sizes),
            files_selected=int(pc.sum(self.selection).as_py() or 0),
            bytes_total=int(pc.sum(sizes).as_py() or 0),
            bytes_selected=int(pc.sum(sizes.filter(self.selection)).as_py() or 0),
        )

    def __repr__(self) -> str:
        return f"Scan({self._snapshot!r}, predicate={self._predicate!r})"


def _projected(schema: StructType, columns: Sequence[str] | None) -> StructType:
    """``schema``'s fields named by ``columns`` (case-insensitively), in table order."""
    if columns is None:
        return schema
    by_name = {f.name.lower(): f for f in schema.fields}
    unknown = [c for c in columns if c.lower() not in by_name]
    if unknown:
        raise KeyError(f"no column {', '.join(unknown)} in the table (columns: {', '.join(f.name for f in schema.fields)})")
    wanted = {c.lower() for c in columns}
    return StructType(tuple(f for f in schema.fields if f.name.lower() in wanted))


def conjunction(predicates: Sequence[Predicate]) -> Predicate | None:
    """The AND of ``predicates`` (None for none): one scan predicate from an engine's filters."""
    result: Predicate | None = None
    for predicate in predicates:
        result = predicate if result is None else And(result, predicate)
    return result


def logical_rows(files: pa.Table) -> int:
    """Rows of ``files`` (scan files) by the log alone: ``num_records`` less DV cardinalities
    (0 for files without stats). The row counts delta-spark reports for whole files removed."""
    if not files.num_rows:
        return 0
    physical = pc.sum(files.column(NUM_RECORDS)).as_py()
    deleted = pc.sum(cast(pa.StructArray, files.column(DELETION_VECTOR).combine_chunks()).field("cardinality")).as_py()
    return int(physical or 0) - int(deleted or 0)

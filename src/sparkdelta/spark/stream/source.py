"""Delta tables as Structured Streaming sources: ``readStream.format("delta")``.

Spark drives a Python data source stream reader: its offsets, admission and file lists
come from the kernel's ``StreamPlanner`` (run in the one Python process Spark keeps for the
query's source), and each micro-batch's files are read in Spark's Python workers and
handed over as Arrow batches (``arrow_files``). Storage settings reach the workers as an
internal option, filled in by the session from its own settings.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from ...kernel import column_mapping
from ...kernel.errors import DeltaError, StreamingSourceError
from ...kernel.snapshot import Snapshot
from ...kernel.streaming import Admission, SourceOffset, StreamPlanner
from ...kernel.table import Table
from ..read.field_metadata import read_schema
from .arrow_files import CHANGE_COLUMNS, RowLayout, read_entry
from .options import stream_options

STORAGE_OPTION = "__sparkdelta_storage"
"""The internal option carrying the kernel's storage settings (JSON) to the source's processes."""
_PARTITION_BYTES = 128 << 20
_PARTITIONS_WANTED = 8
_PARTITION_MIN_BYTES = 4 << 20
"""Below this a partition's task costs more than reading its share in parallel saves: a
fresh stream's first batch of 10 small change files came out in 6.1-6.5 s from ``start()``
in one or two tasks, against 7.1 s in ten."""

F = TypeVar("F", bound=Callable[..., Any])


def _with_error_class(method: F) -> F:
    """Kernel errors leave the source with their error class in the message, as Spark's stream error shows it."""

    @functools.wraps(method)
    def reporting(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except DeltaError as error:
            if error.error_class and not str(error).startswith("["):
                raise type(error)(f"[{error.error_class}] {error}") from error
            raise

    return cast(F, reporting)


def open_source_table(path: str, options: dict[str, str]) -> Table:
    """The table a source reads, with the storage settings the session handed over."""
    storage = json.loads(options.get(STORAGE_OPTION) or "{}")
    return Table(path, storage_options=storage) if storage else Table(path)


def stream_schema(snapshot: Snapshot, read_change_feed: bool) -> StructType:
    """The rows' schema: the table's as reads show it, with the change feed's columns when asked."""
    schema = read_schema(StructType.fromJson(snapshot.schema.to_json()))
    if read_change_feed:
        for name, data_type in zip(CHANGE_COLUMNS, (StringType(), LongType(), TimestampType()), strict=True):
            schema = schema.add(StructField(name, data_type))
    return schema


def _refuse_changed_schema(table: str, defined: StructType, now: StructType) -> None:
    """Refuse a stream whose table changed its schema between ``load()``, which fixed the
    rows' schema (``defined``), and the query's start: its planner starts from the table
    as it is now, would see no change to stop at, and the rows would silently lose the
    new columns. Defined again, the stream reads on with them (delta-spark's advice)."""
    if defined.simpleString() != now.simpleString():
        raise StreamingSourceError(
            f"[DELTA_SCHEMA_CHANGED] Detected schema change since the stream was defined:\n"
            f"streaming source schema: {defined.simpleString()}\n\ndata file schema: {now.simpleString()}\n\n"
            f"Define the stream again (readStream ... load) and restart the query. The source table is {table}.",
            error_class="DELTA_SCHEMA_CHANGED",
        )


class FilesPartition(InputPartition):
    """One Spark task's share of a micro-batch: stream entries (a dict per file)."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        super().__init__(entries)
        self.entries = entries


class DeltaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Spark's view of a Delta stream: offsets from the kernel's planner, files read as Arrow."""

    def __init__(self, path: str, options: dict[str, str], schema: StructType) -> None:
        self.path = path
        self.storage_settings = options.get(STORAGE_OPTION) or "{}"
        self.stream_options = stream_options({k: v for k, v in options.items() if k != STORAGE_OPTION})
        table = open_source_table(path, options)
        snapshot = table.snapshot()
        snapshot.require_readable()
        _refuse_changed_schema(table.root, schema, stream_schema(snapshot, self.stream_options.read_change_feed))
        self.root = table.root
        self.layout = self._layout(snapshot, schema)
        self._planner: StreamPlanner | None = StreamPlanner(table, self.stream_options, snapshot)
        if (
            self.stream_options.read_change_feed
            and snapshot.configuration.get("delta.enableChangeDataFeed", "false").lower() != "true"
        ):
            raise StreamingSourceError(
                f"[DELTA_MISSING_CHANGE_DATA] {table.root}: cannot read the change feed as a stream: "
                f"delta.enableChangeDataFeed is not true at version {snapshot.version}",
                error_class="DELTA_MISSING_CHANGE_DATA",
            )

    def __getstate__(self) -> dict[str, Any]:
        # Workers read files; only the source's own process plans.
        return {k: v for k, v in self.__dict__.items() if k != "_planner"}

    @staticmethod
    def _layout(snapshot: Snapshot, schema: StructType) -> RowLayout:
        table_schema = snapshot.schema.to_json()
        shown = {f.name.lower() for f in schema.fields}
        fields = [f for f in table_schema["fields"] if f["name"].lower() in shown]
        data_names = {f["name"].lower() for f in fields}
        output_fields = [f for f in schema.fields if f.name.lower() in data_names or f.name in CHANGE_COLUMNS]
        return RowLayout(
            schema_json={"type": "struct", "fields": fields},
            partition_columns=tuple(c for c in snapshot.partition_columns if c.lower() in data_names),
            by_field_id=column_mapping.mapping_mode(dict(snapshot.configuration)) == "id",
            output=to_arrow_schema(StructType(output_fields), timezone="UTC"),
        )

    @property
    def planner(self) -> StreamPlanner:
        assert self._planner is not None, "the planner lives in the source's own process"
        return self._planner

    def _offset(self, raw: dict[str, Any]) -> SourceOffset:
        return SourceOffset.from_json(raw, self.planner.table_id, self.root)

    @_with_error_class
    def initialOffset(self) -> dict[str, Any]:
        return self.planner.initial_offset().to_json(self.planner.table_id)

    @_with_error_class
    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        admission = None if isinstance(limit, ReadAllAvailable) else self.stream_options.admission
        return self.planner.latest_offset(self._offset(start), admission).to_json(self.planner.table_id)

    def getDefaultReadLimit(self) -> ReadLimit:
        admission: Admission = self.stream_options.admission
        if admission.max_files is not None:
            return ReadMaxFiles(admission.max_files)
        if admission.max_bytes is not None:
            return ReadMaxBytes(admission.max_bytes)
        return ReadAllAvailable()

    @_with_error_class
    def prepareForTriggerAvailableNow(self) -> None:
        self.planner.prepare_available_now()

    @_with_error_class
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        files = self.planner.files_between(self._offset(start), self._offset(end))
        return _packed(files)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        table = open_source_table(self.root, {STORAGE_OPTION: self.storage_settings})
        for entry in cast(FilesPartition, partition).entries:
            yield from read_entry(table.storage, table.root, entry, self.layout)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the log is the source's only state."""


def _packed(files: pa.Table) -> list[FilesPartition]:
    """A micro-batch's files in stream order, packed into partitions of up to 128 MiB
    (smaller when the batch is small, so that every core gets work, but not under 4 MiB)."""
    entries = files.to_pylist()
    if not entries:
        return []
    total = sum(int(e["size"] or 0) for e in entries)
    target = min(_PARTITION_BYTES, max(total // _PARTITIONS_WANTED, _PARTITION_MIN_BYTES))
    partitions: list[FilesPartition] = []
    current: list[dict[str, Any]] = []
    size = 0
    for entry in entries:
        if current and size + int(entry["size"] or 0) > target:
            partitions.append(FilesPartition(current))
            current, size = [], 0
        current.append(_plain(entry))
        size += int(entry["size"] or 0)
    partitions.append(FilesPartition(current))
    return partitions


def _plain(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry as plain Python values (its partition values a dict, as the log writes them)."""
    values = entry.get("partitionValues")
    if isinstance(values, list):
        entry["partitionValues"] = dict(values)
    return entry

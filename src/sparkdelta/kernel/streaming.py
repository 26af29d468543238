"""A Delta table read as a stream: delta-spark's ``DeltaSource`` offsets and admission, without Spark.

An offset is a table version and an index among that version's files, as delta-spark's
``DeltaSourceOffset``: everything at or before it has been read. A stream that starts
without ``startingVersion``/``startingTimestamp`` first reads the snapshot it starts at
(``isStartingVersion``, files ordered by modification time and path, as delta-spark
orders them), then every commit after it. A commit contributes the files it adds with
``dataChange`` (OPTIMIZE's rewrites are not data), in log order; its removes stop the
stream unless ``ignoreDeletes``, ``ignoreChanges`` or ``skipChangeCommits`` allow them.
Reading the change feed, a commit contributes its ``cdc`` files, or else its adds as
inserts and its removes as deletes. Files are kept as Arrow tables, a row per file.

Spark records only the end of each micro-batch in a query's checkpoint; the start of the
first batch is the source's initial offset, asked for again when a restarted query runs
that batch once more. So the initial offset is ``UNSTARTED``, a value no batch ends at,
and the first batch's start is derived from what was recorded (its end, and the
options), as delta-spark derives it when Spark gives it no start: never from the table
as it is when the query restarts, which other writers may have moved on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import actions as A
from .errors import StreamingSourceError
from .parsing import ActionBatch
from .schema import StructType, parse_schema
from .snapshot import Snapshot
from .stats_schema import read_stats_json
from .table import Table, to_millis

BASE_INDEX = -1
"""An offset's index before a version's first file."""
SOURCE_VERSION = 1
"""The offset layout's version, as delta-spark writes it in a checkpoint's offsets."""
DEFAULT_MAX_FILES = 1000
"""``maxFilesPerTrigger`` when neither it nor ``maxBytesPerTrigger`` is given (delta-spark's default)."""

INSERT, DELETE = "insert", "delete"

ENTRY = pa.schema(
    cast(
        "list[pa.Field[Any]]",
        [
            pa.field("path", pa.string()),
            pa.field("size", pa.int64()),
            pa.field("partitionValues", A.STRING_MAP),
            pa.field("deletionVector", A.DELETION_VECTOR),
            pa.field("change_type", pa.string()),
            pa.field("version", pa.int64()),
            pa.field("index", pa.int64()),
            pa.field("commit_timestamp", pa.int64()),
        ],
    )
)
"""One file a stream reads: where, how big, its partition values and deletion vector, the
change it stands for (the change feed's ``_change_type``; null for a ``cdc`` file, whose
rows carry their own), and its place in the stream (version, index, commit time)."""


@dataclass(frozen=True, order=True)
class SourceOffset:
    """How far a stream has read: through file ``index`` of ``version`` (delta-spark's ``DeltaSourceOffset``)."""

    version: int
    index: int
    is_initial_snapshot: bool = False

    @property
    def unstarted(self) -> bool:
        return self.version < 0

    def to_json(self, table_id: str) -> dict[str, Any]:
        return {
            "sourceVersion": SOURCE_VERSION,
            "reservoirId": table_id,
            "reservoirVersion": self.version,
            "index": self.index,
            "isStartingVersion": self.is_initial_snapshot,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any], table_id: str, table: str) -> SourceOffset:
        """The offset a checkpoint holds, refused when it was taken on another table (delta-spark's check)."""
        if raw.get("reservoirId") != table_id:
            raise StreamingSourceError(
                f"{table}: the checkpoint's offsets belong to Delta table {raw.get('reservoirId')}, but this table's id is "
                f"{table_id}: the table was replaced or the checkpoint is another query's; start from a new checkpoint",
                error_class="DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE",
            )
        return cls(int(raw["reservoirVersion"]), int(raw["index"]), bool(raw.get("isStartingVersion", False)))


UNSTARTED = SourceOffset(-1, BASE_INDEX, is_initial_snapshot=True)
"""The initial offset: before the first batch, wherever the stream starts."""


@dataclass(frozen=True)
class Admission:
    """How much one micro-batch may take: files and bytes (a soft limit: at least one file)."""

    max_files: int | None = DEFAULT_MAX_FILES
    max_bytes: int | None = None

    @property
    def unlimited(self) -> bool:
        return self.max_files is None and self.max_bytes is None

    def count(self, sizes: np.ndarray) -> int:
        """How many of the leading files of ``sizes`` fit: a file is taken while files and bytes remain."""
        taken = len(sizes)
        if self.max_files is not None:
            taken = min(taken, self.max_files)
        if self.max_bytes is not None and taken:
            before = np.concatenate(([0], np.cumsum(sizes[: taken - 1])))
            taken = int(np.count_nonzero(before < self.max_bytes))
        return max(taken, 0)

    def fits(self, sizes: np.ndarray) -> bool:
        """Whether all of ``sizes`` fit in what remains (delta-spark's admission of a whole commit)."""
        return (self.max_files is None or self.max_files >= len(sizes)) and (
            self.max_bytes is None or self.max_bytes >= int(sizes.sum())
        )

    def after(self, sizes: np.ndarray) -> Admission:
        """What remains once ``sizes`` were taken."""
        return Admission(
            None if self.max_files is None else self.max_files - len(sizes),
            None if self.max_bytes is None else self.max_bytes - int(sizes.sum()),
        )

    @property
    def exhausted(self) -> bool:
        return (self.max_files is not None and self.max_files <= 0) or (self.max_bytes is not None and self.max_bytes <= 0)


@dataclass(frozen=True)
class StreamOptions:
    """delta-spark's source options that decide which files a stream reads."""

    starting_version: int | None = None
    starting_latest: bool = False
    starting_timestamp: str | None = None
    admission: Admission = Admission()
    ignore_deletes: bool = False
    ignore_changes: bool = False
    skip_change_commits: bool = False
    exclude_regex: str | None = None
    read_change_feed: bool = False
    fail_on_data_loss: bool = True
    event_time_column: str | None = None
    """With ``withEventTimeOrder``: the watermark's column, which orders the initial snapshot."""


def _schema_key(schema: StructType) -> Any:
    """A schema's names, types and nullability: what a stream's rows depend on (not field metadata)."""
    return _type_key(schema.to_json())


def _type_key(data_type: Any) -> Any:
    if isinstance(data_type, dict):
        if data_type.get("type") == "struct":
            return ("struct", tuple((f["name"], _type_key(f["type"]), f.get("nullable", True)) for f in data_type["fields"]))
        if data_type.get("type") == "array":
            return ("array", _type_key(data_type["elementType"]), data_type.get("containsNull", True))
        if data_type.get("type") == "map":
            return (
                "map",
                _type_key(data_type["keyType"]),
                _type_key(data_type["valueType"]),
                data_type.get("valueContainsNull", True),
            )
    return data_type


def _empty_entries() -> pa.Table:
    return ENTRY.empty_table()


def _entries(
    actions: pa.StructArray | pa.Table, change_type: str | None, version: int, timestamp: int, first_index: int = 0
) -> pa.Table:
    """File actions (add, remove or cdc rows) as stream entries, indexed from ``first_index``."""
    n = len(actions)
    if n == 0:
        return _empty_entries()
    table = pa.Table.from_struct_array(actions) if isinstance(actions, pa.StructArray) else actions

    def column(name: str, arrow_type: pa.DataType) -> pa.Array[Any] | pa.ChunkedArray[Any]:
        return table.column(name).cast(arrow_type) if name in table.column_names else pa.nulls(n, cast(Any, arrow_type))

    return pa.table(
        [
            column("path", pa.string()),
            column("size", pa.int64()),
            column("partitionValues", A.STRING_MAP),
            column("deletionVector", A.DELETION_VECTOR),
            pa.nulls(n, pa.string()) if change_type is None else pa.repeat(pa.scalar(change_type), n),
            pa.repeat(pa.scalar(version, pa.int64()), n),
            pa.array(np.arange(first_index, first_index + n, dtype=np.int64)),
            pa.repeat(pa.scalar(timestamp, pa.int64()), n),
        ],
        schema=ENTRY,
    )


def _data_changing(actions: pa.StructArray) -> pa.StructArray:
    if len(actions) == 0:
        return actions
    return actions.filter(cast(pa.BooleanArray, actions.field("dataChange").fill_null(True)))


class StreamPlanner:
    """The files a stream over ``table`` reads between offsets, and how far a micro-batch may go.

    ``read_schema`` is the schema the stream's rows have (the table's when the query
    started); a commit that changes it ends the stream there, as delta-spark does: a
    restart reads on with the new schema.
    """

    def __init__(self, table: Table, options: StreamOptions, start_snapshot: Snapshot) -> None:
        self.table = table
        self.options = options
        self.table_id = start_snapshot.metadata.id
        self.read_schema = start_snapshot.schema
        self._exclude = re.compile(options.exclude_regex) if options.exclude_regex else None
        self._start_snapshot = start_snapshot
        self._snapshot_entries: dict[int, pa.Table] = {}
        self._snapshot_groups: np.ndarray | None = None
        self._commit_entries: dict[int, tuple[pa.Table, ActionBatch]] = {}
        self._timestamps: dict[int, int] = {}
        self._target: SourceOffset | None = None

    # -- where a new stream starts -------------------------------------------------

    def initial_offset(self) -> SourceOffset:
        """``UNSTARTED``, once the options name a start this table has (an error otherwise)."""
        self._start()
        return UNSTARTED

    def _start(self) -> SourceOffset:
        """Where this run's first batch starts: before the starting snapshot's files, or
        before the starting version's (the version after the latest, for ``latest``)."""
        options = self.options
        latest = self._start_snapshot.version
        if options.starting_latest:
            return SourceOffset(latest + 1, BASE_INDEX)
        if options.starting_version is not None:
            if options.starting_version > latest:
                raise StreamingSourceError(
                    f"{self.table.root}: startingVersion {options.starting_version} is after the latest version {latest}",
                    error_class="DELTA_INVALID_VERSION",
                )
            return SourceOffset(options.starting_version, BASE_INDEX)
        if options.starting_timestamp is not None:
            return SourceOffset(self._version_at_or_after(options.starting_timestamp, latest), BASE_INDEX)
        return SourceOffset(latest, BASE_INDEX, is_initial_snapshot=True)

    def _recorded_start(self, end: SourceOffset) -> SourceOffset | None:
        """Where the first batch, recorded as ending at ``end``, started: a function of
        ``end`` and the options alone (delta-spark's ``extractStartingState``). A batch
        that ends past its starting snapshot started at the snapshot of the version
        before its end: the same rows as the snapshot it was planned on, plus the commits
        between. None for ``latest``, whose first batch holds no files (``latest_offset``)."""
        options = self.options
        if options.starting_latest:
            return None
        if options.starting_version is not None:
            return SourceOffset(options.starting_version, BASE_INDEX)
        if options.starting_timestamp is not None:
            return SourceOffset(self._version_at_or_after(options.starting_timestamp, end.version), BASE_INDEX)
        snapshot_version = end.version if end.is_initial_snapshot else end.version - 1
        return SourceOffset(snapshot_version, BASE_INDEX, is_initial_snapshot=True)

    def _version_at_or_after(self, timestamp: str, latest: int) -> int:
        """The first commit at or after ``timestamp`` (delta-spark's ``getStartingVersionFromTimestamp``)."""
        wanted = to_millis(timestamp)
        timeline = self.table.commit_timestamps()
        for version, committed in timeline:
            if committed >= wanted:
                return version
        raise StreamingSourceError(
            f"{self.table.root}: startingTimestamp {timestamp} is after the latest commit (version {latest}); "
            "give an earlier timestamp, or startingVersion 'latest' to read only new commits",
            error_class="DELTA_TIMESTAMP_GREATER_THAN_COMMIT",
        )

    # -- how far a micro-batch goes --------------------------------------------------

    def prepare_available_now(self) -> None:
        """Fix the end of an ``availableNow`` run: the table's latest version now."""
        self._target = SourceOffset(self.table.latest_version() + 1, BASE_INDEX)

    def latest_offset(self, start: SourceOffset, admission: Admission | None) -> SourceOffset:
        """The end of the next micro-batch from ``start``: as many files as ``admission`` lets
        in (all, when None), stopping before a commit that changes the schema. A change-feed
        commit of ``cdc`` files or deletion vectors goes into one batch whole (its update's
        pre- and post-images together), when it fits or is the batch's first, as delta-spark
        admits it."""
        if start.unstarted:
            start = self._start()
            if self.options.starting_latest:
                # The first batch only records where the stream starts: the version after
                # the latest at the first run, which nothing else recorded could tell.
                return start
        limit = admission or Admission(None, None)
        end = start
        for visited, (version, entries, is_snapshot) in enumerate(self._versions_from(start)):
            if not is_snapshot:
                if self._schema_changes_at(version):
                    if end != start:  # the files before the change go first
                        return end
                    self._stop_at_schema_change(version)
            entries = (
                entries.filter(pc.greater(entries.column("index"), pa.scalar(start.index, pa.int64())))
                if version == start.version
                else entries
            )
            sizes = cast("pa.ChunkedArray[Any]", pc.coalesce(entries.column("size"), pa.scalar(0, pa.int64()))).to_numpy()
            if limit.unlimited:
                taken = len(sizes)
            elif not is_snapshot and self._taken_whole(entries):
                taken = len(sizes) if not visited or limit.fits(sizes) else 0
            else:
                taken = limit.count(sizes)
            if is_snapshot and taken and self._snapshot_groups is not None:
                # Whole event-time groups only: a later batch never brings earlier events.
                groups = self._snapshot_groups[len(self._snapshot_groups) - len(sizes) :]
                taken = int(np.searchsorted(groups, groups[taken - 1], side="right"))
            if taken < len(sizes):
                if taken:
                    end = SourceOffset(version, int(entries.column("index")[taken - 1].as_py()), is_snapshot)
                return end
            end = SourceOffset(version + 1, BASE_INDEX)
            limit = limit.after(sizes)
            if not limit.unlimited and limit.exhausted:
                return end
        return end

    def _taken_whole(self, entries: pa.Table) -> bool:
        """Whether a commit's change-feed entries must not be split between batches: ``cdc``
        files (no change type of their own), or files with deletion vectors."""
        if not self.options.read_change_feed or not entries.num_rows:
            return False
        return bool(entries.column("change_type").null_count or entries.num_rows - entries.column("deletionVector").null_count)

    def _versions_from(self, start: SourceOffset) -> Iterator[tuple[int, pa.Table, bool]]:
        """Each version from ``start`` on with the files it contributes, up to the latest (or ``availableNow``'s end)."""
        version = start.version
        if start.is_initial_snapshot:
            yield version, self._snapshot_files(version), True
            version += 1
        latest = self.table.latest_version()
        if self._target is not None:
            latest = min(latest, self._target.version - 1)
        while version <= latest:
            yield version, self._commit_files(version), False
            version += 1

    # -- the files between two offsets ---------------------------------------------

    def files_between(self, start: SourceOffset, end: SourceOffset) -> pa.Table:
        """The files after ``start`` up to and including ``end``, in stream order."""
        if start.unstarted:
            recorded = self._recorded_start(end)
            if recorded is None:
                return _empty_entries()
            start = recorded
        parts: list[pa.Table] = []
        for version, entries, _ in self._versions_from(start):
            if version > end.version or (version == end.version and end.index == BASE_INDEX):
                break
            if version == start.version:
                entries = entries.filter(pc.greater(entries.column("index"), pa.scalar(start.index, pa.int64())))
            if version == end.version:
                entries = entries.filter(pc.less_equal(entries.column("index"), pa.scalar(end.index, pa.int64())))
            parts.append(entries)
        return pa.concat_tables(parts) if parts else _empty_entries()

    # -- one version's files ---------------------------------------------------------

    def _snapshot_files(self, version: int) -> pa.Table:
        """The starting snapshot's files, ordered as delta-spark orders them (modification time, path)."""
        cached = self._snapshot_entries.get(version)
        if cached is not None:
            return cached
        snapshot = self._start_snapshot if self._start_snapshot.version == version else self.table.snapshot(version)
        files = snapshot.files
        if self._exclude is not None:
            files = files.filter(self._kept_paths(files.column("path")))
        if self.options.event_time_column is not None:
            files, self._snapshot_groups = _in_event_time_order(files, snapshot, self.options.event_time_column)
        else:
            order = pc.sort_indices(files, sort_keys=[("modificationTime", "ascending"), ("path", "ascending")])
            files = files.take(order)
        entries = _entries(files, INSERT if self.options.read_change_feed else None, version, snapshot.timestamp)
        self._snapshot_entries = {version: entries}
        return entries

    def _kept_paths(self, paths: pa.ChunkedArray[Any] | pa.Array[Any]) -> pa.Array[Any]:
        """Which ``paths`` ``excludeRegex`` keeps (delta-spark tests the regex against the log's path)."""
        assert self._exclude is not None
        return pa.array([self._exclude.search(str(p)) is None for p in paths.to_pylist()], pa.bool_())

    def _read_commit(self, version: int) -> ActionBatch | None:
        try:
            return Snapshot.read_commit(self.table.storage, self.table.root, version)
        except FileNotFoundError as error:
            if self.options.fail_on_data_loss:
                raise StreamingSourceError(
                    f"{self.table.root}: the commit of version {version} is no longer in the log (cleaned up after a "
                    "checkpoint, past delta.logRetentionDuration); the stream cannot go on without losing data. Start a "
                    "new query, or set failOnDataLoss to false to skip it",
                    error_class="DELTA_FILE_NOT_FOUND_DETAILED",
                ) from error
            return None

    def _commit_files(self, version: int) -> pa.Table:
        cached = self._commit_entries.get(version)
        if cached is not None:
            return cached[0]
        batch = self._read_commit(version)
        entries = _empty_entries() if batch is None else self._contributed(version, batch)
        if batch is not None:
            if len(self._commit_entries) > 64:
                self._commit_entries.pop(min(self._commit_entries))
            self._commit_entries[version] = (entries, batch)
        return entries

    def _commit_timestamp(self, version: int, batch: ActionBatch) -> int:
        info = batch.commit_info or {}
        if "inCommitTimestamp" in info:
            return int(info["inCommitTimestamp"])
        if version not in self._timestamps:
            self._timestamps.update(self.table.commit_timestamps())
        return self._timestamps.get(version, int(info.get("timestamp", 0)))

    def _contributed(self, version: int, batch: ActionBatch) -> pa.Table:
        """What commit ``version`` adds to the stream, or an error for changes the options do not allow."""
        adds, removes = _data_changing(batch.adds), _data_changing(batch.removes)
        if self._exclude is not None and len(adds):
            adds = adds.filter(self._kept_paths(adds.field("path")))
        if self.options.read_change_feed:
            timestamp = self._commit_timestamp(version, batch)
            if len(batch.cdcs):
                return _entries(batch.cdcs, None, version, timestamp)
            inserts = _entries(adds, INSERT, version, timestamp)
            deletes = _entries(removes, DELETE, version, timestamp, first_index=len(adds))
            return pa.concat_tables([inserts, deletes])
        if len(removes):
            example = removes.field("path")[0].as_py()
            if self.options.skip_change_commits:
                return _empty_entries()
            if len(adds) and not self.options.ignore_changes:
                raise StreamingSourceError(
                    f"Detected a data update (for example {example}) in the source table at version {version}. This is "
                    "currently not supported. If this is going to happen regularly and you are okay to skip changes, set "
                    "the option 'skipChangeCommits' to 'true'. If you would like the data update to be reflected, please "
                    "restart this query with a fresh checkpoint directory. The source table can be found at path "
                    f"{self.table.root}.",
                    error_class="DELTA_SOURCE_TABLE_IGNORE_CHANGES",
                )
            if not len(adds) and not (self.options.ignore_deletes or self.options.ignore_changes):
                raise StreamingSourceError(
                    f"Detected deleted data (for example {example}) from streaming source at version {version}. This is "
                    "currently not supported. If you'd like to ignore deletes, set the option 'ignoreDeletes' to 'true'. "
                    f"The source table can be found at path {self.table.root}.",
                    error_class="DELTA_SOURCE_IGNORE_DELETE",
                )
        return _entries(adds, None, version, 0)

    # -- schema changes ----------------------------------------------------------------

    def _schema_changes_at(self, version: int) -> bool:
        """Whether commit ``version`` sets a schema whose data the stream's schema cannot read.

        Data written before columns were added reads with them null, so a stream started
        after an ``ADD COLUMNS`` reads older commits on (delta-spark's read compatibility).
        """
        cached = self._commit_entries.get(version)
        batch = cached[1] if cached else self._read_commit(version)
        if batch is None or batch.metadata is None:
            return False
        return not _reads(self.read_schema, parse_schema(batch.metadata.get("schemaString")))

    def _stop_at_schema_change(self, version: int) -> None:
        """Stop a stream whose next commit changes its schema, with delta-spark's error."""
        cached = self._commit_entries.get(version)
        batch = cached[1] if cached else self._read_commit(version)
        assert batch is not None and batch.metadata is not None
        new_schema = parse_schema(batch.metadata.get("schemaString"))
        additive = _reads(new_schema, self.read_schema)
        mapped = (batch.metadata.get("configuration") or {}).get("delta.columnMapping.mode", "none") != "none"
        if mapped and not additive:
            raise StreamingSourceError(
                "Streaming read is not supported on tables with read-incompatible schema changes (e.g. rename or drop "
                f"or datatype changes): version {version} of {self.table.root} makes one. sparkdelta has no schema "
                "tracking log (schemaTrackingLocation); restart the query from a new checkpoint, or from "
                f"startingVersion {version}, to read on with the new schema.\nRead schema: {_show(self.read_schema)}\n"
                f"Incompatible data schema: {_show(new_schema)}",
                error_class="DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG",
            )
        raise StreamingSourceError(
            f"Detected schema change in version {version}:\nstreaming source schema: {_show(self.read_schema)}\n\n"
            f"data file schema: {_show(new_schema)}\n\n"
            + (
                "The change only adds columns: restart the query to read on with the new schema."
                if additive
                else "Please try restarting the query. If this issue repeats across query restarts without making "
                "progress, you have made an incompatible schema change and need to start your query from scratch using "
                "a new checkpoint directory."
            )
            + f" The source table is {self.table.root}.",
            error_class="DELTA_SCHEMA_CHANGED_WITH_VERSION",
        )


def _event_time_bounds(files: pa.Table, snapshot: Snapshot, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Each file's least and greatest ``column`` value from its stats, as floats
    (-inf and +inf where unknown: such a file overlaps every other)."""
    field = snapshot.schema.field(column)
    kind = field.type.to_json()
    arrow = {"timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us"), "date": pa.date32()}.get(str(kind))
    text_type = pa.string() if arrow is not None else pa.float64()
    name = field.physical_name
    bounds_type = pa.struct([pa.field(name, text_type)])
    stats_type = pa.schema([pa.field("minValues", bounds_type), pa.field("maxValues", bounds_type)])
    has_stats = "stats" in files.column_names and not pa.types.is_null(files.schema.field("stats").type)
    stats = files.column("stats").combine_chunks() if has_stats else pa.nulls(files.num_rows, pa.string())
    parsed = read_stats_json(stats, stats_type)

    def values(side: str, unknown: float) -> np.ndarray:
        raw = pc.struct_field(parsed.column(side).combine_chunks(), [0])
        if arrow is not None:
            try:
                raw = raw.cast(arrow).cast(pa.int64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raw = pa.nulls(len(raw), pa.int64())
        numbers = raw.cast(pa.float64()).to_numpy(zero_copy_only=False)
        return np.where(np.isnan(numbers), unknown, numbers)

    return values("minValues", -np.inf), values("maxValues", np.inf)


def _in_event_time_order(files: pa.Table, snapshot: Snapshot, column: str) -> tuple[pa.Table, np.ndarray]:
    """The snapshot's files by their least event time, and a group per run of files whose
    event-time ranges overlap (delta-spark's ``withEventTimeOrder``): a batch takes whole
    groups, so no file with earlier events is left for a later batch to bring in late."""
    least, greatest = _event_time_bounds(files, snapshot, column)
    order = np.lexsort((np.asarray(files.column("path").to_pylist(), dtype=object), least))
    least, greatest = least[order], greatest[order]
    reach = np.maximum.accumulate(greatest)
    starts = np.concatenate(([True], least[1:] > reach[:-1])) if len(order) else np.zeros(0, dtype=bool)
    return files.take(order.astype(np.int64)), np.cumsum(starts)


def _show(schema: StructType) -> str:
    return json.dumps(schema.to_json())


def _reads(read: StructType, written: StructType) -> bool:
    """Whether rows written with schema ``written`` read losslessly as ``read``: each written
    column is read with its type, never as non-null when it may hold nulls, and the
    columns ``read`` adds are nullable."""
    read_fields = {f.name.lower(): f for f in read.fields}
    written_fields = {f.name.lower(): f for f in written.fields}
    for name, field in written_fields.items():
        reader = read_fields.get(name)
        if reader is None or _type_key(reader.to_json()["type"]) != _type_key(field.to_json()["type"]):
            return False
        if field.nullable and not reader.nullable:
            return False
    return all(f.nullable for n, f in read_fields.items() if n not in written_fields)

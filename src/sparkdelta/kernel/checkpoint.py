"""Writing checkpoints and cleaning up expired log files.

Checkpoints use delta-spark's classic single-file Parquet layout
(``actions.CHECKPOINT_SCHEMA``) so every Delta reader can start from them. File stats go
in as JSON (``add.stats``) unless ``delta.checkpoint.writeStatsAsJson`` is false, and also
typed (``add.stats_parsed``, with ``add.partitionValues_parsed``) when
``delta.checkpoint.writeStatsAsStruct`` is true (PROTOCOL.md, writer version 3). They are
written atomically (temp file then rename), then ``_last_checkpoint`` is updated; a crash
in between leaves at worst an unused checkpoint, never an unreadable table.
"""

from __future__ import annotations

import io
import json
import logging
import re
import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import actions as A
from .features import is_true
from .log_files import LAST_CHECKPOINT, LOG_DIR, LogFile, LogFileKind, classic_checkpoint_name
from .log_segment import list_log
from .partitions import typed_partition_values
from .protocol import writer_features
from .snapshot import Snapshot
from .stats_schema import parsed_stats, stats_leaves
from .storage import Storage

log = logging.getLogger(__name__)

DEFAULT_CHECKPOINT_INTERVAL = 10
DEFAULT_LOG_RETENTION = "interval 30 days"
DEFAULT_TOMBSTONE_RETENTION = "interval 1 week"

_UNITS_MS = {
    "millisecond": 1,
    "second": 1000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 604_800_000,
}


def parse_interval_ms(text: str) -> int:
    """Milliseconds in a Delta interval property such as ``interval 30 days``."""
    match = re.fullmatch(r"\s*(?:interval\s+)?(\d+)\s*([a-z]+?)s?\s*", text.lower())
    if not match or match.group(2) not in _UNITS_MS:
        raise ValueError(f"cannot parse interval {text!r}: expected e.g. 'interval 30 days'")
    return int(match.group(1)) * _UNITS_MS[match.group(2)]


def checkpoint_interval(configuration: dict[str, str]) -> int:
    return max(1, int(configuration.get("delta.checkpointInterval", DEFAULT_CHECKPOINT_INTERVAL)))


def _rows(schema: pa.Schema, column: str, values: pa.Array[Any]) -> pa.Table:
    """Checkpoint rows where ``column`` holds ``values`` and every other column is null."""
    arrays = [values if f.name == column else pa.nulls(len(values), f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def _small(schema: pa.Schema, column: str, items: list[dict[str, Any]]) -> pa.Table:
    return _rows(schema, column, pa.array(items, type=schema.field(column).type))


def _file_rows(schema: pa.Schema, column: str, files: pa.Table) -> pa.Table:
    layout = schema.field(column).type
    values = pa.StructArray.from_arrays([files.column(f.name).combine_chunks() for f in layout], fields=list(layout))
    return _rows(schema, column, values)


def _add_values(snapshot: Snapshot, layout: pa.StructType) -> pa.StructArray:
    """The ``add`` column with stats as the table's checkpoint properties ask."""
    files = snapshot.files
    config = snapshot.configuration
    fields = list(layout)
    children = [files.column(f.name).combine_chunks() for f in layout]
    if config.get("delta.checkpoint.writeStatsAsJson") is not None and not is_true(config, "delta.checkpoint.writeStatsAsJson"):
        children[layout.get_field_index("stats")] = pa.nulls(files.num_rows, pa.string())
    if is_true(config, "delta.checkpoint.writeStatsAsStruct"):
        if snapshot.partition_columns:
            typed = typed_partition_values(
                files.column("partitionValues").combine_chunks(), snapshot.schema, snapshot.partition_columns
            )
            names = [snapshot.schema.field(c).physical_name for c in typed.column_names]
            parsed = pa.StructArray.from_arrays([c.combine_chunks() for c in typed.columns], names=names)
            fields.append(pa.field("partitionValues_parsed", parsed.type))
            children.append(parsed)
        leaves = stats_leaves(snapshot.schema, snapshot.partition_columns, config)
        stats = parsed_stats(files.column("stats").combine_chunks(), leaves)
        fields.append(pa.field("stats_parsed", stats.type))
        children.append(stats)
    return pa.StructArray.from_arrays(children, fields=fields)


def checkpoint_table(snapshot: Snapshot, now_ms: int | None = None) -> pa.Table:
    """The checkpoint rows for ``snapshot``: protocol, metadata, txns, domains, adds, live tombstones."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    retention = parse_interval_ms(snapshot.configuration.get("delta.deletedFileRetentionDuration", DEFAULT_TOMBSTONE_RETENTION))
    v2 = "v2Checkpoint" in writer_features(snapshot.protocol)
    schema = A.V2_CHECKPOINT_SCHEMA if v2 else A.CHECKPOINT_SCHEMA
    adds = _add_values(snapshot, schema.field("add").type)
    schema = schema.set(schema.get_field_index("add"), pa.field("add", adds.type))
    metadata = snapshot.metadata.to_dict()
    metadata["format"]["options"] = list(metadata["format"]["options"].items())
    metadata["configuration"] = list(metadata["configuration"].items())
    parts = [
        _small(schema, "protocol", [snapshot.protocol.to_dict()]),
        _small(schema, "metaData", [metadata]),
        _small(schema, "txn", [t.to_dict() for t in snapshot.app_transactions.values()]),
        _small(schema, "domainMetadata", [d.to_dict() for d in snapshot.domain_metadata.values()]),
    ]
    if v2:
        parts.append(_small(schema, "checkpointMetadata", [{"version": snapshot.version, "tags": []}]))
    if snapshot.files.num_rows:
        parts.append(_rows(schema, "add", adds))
    tombstones = snapshot.tombstones
    if tombstones.num_rows:
        deleted_at = tombstones.column("deletionTimestamp").fill_null(pa.scalar(0, pa.int64()))
        live = tombstones.filter(pc.greater(deleted_at, pa.scalar(now_ms - retention, pa.int64())))
        if live.num_rows:
            parts.append(_file_rows(schema, "remove", live))
    return pa.concat_tables(parts)


def write_checkpoint(storage: Storage, snapshot: Snapshot) -> dict[str, Any]:
    """Write a classic checkpoint at the snapshot's version and point ``_last_checkpoint`` to it."""
    log_dir = f"{snapshot.table_root}/{LOG_DIR}"
    table = checkpoint_table(snapshot)
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="snappy")
    data = buffer.getvalue()
    storage.write(f"{log_dir}/{classic_checkpoint_name(snapshot.version)}", data)
    hint = {
        "version": snapshot.version,
        "size": table.num_rows,
        "sizeInBytes": len(data),
        "numOfAddFiles": snapshot.num_files,
    }
    storage.write(f"{log_dir}/{LAST_CHECKPOINT}", json.dumps(hint).encode())
    return hint


def _monotonic_commit_times(files: list[LogFile]) -> dict[int, int]:
    """Commit file times made strictly increasing, as time travel sees them."""
    times: dict[int, int] = {}
    previous = -1
    for f in sorted((f for f in files if f.kind is LogFileKind.COMMIT), key=lambda f: f.version):
        previous = max(f.status.modification_time, previous + 1)
        times[f.version] = previous
    return times


def cleanup_expired_logs(storage: Storage, snapshot: Snapshot, now_ms: int | None = None, retention_ms: int | None = None) -> int:
    """Delete commits, checkpoints and version checksums older than ``delta.logRetentionDuration``.

    Only files below the newest checkpoint that is itself older than the cutoff go, so
    every version newer than the cutoff keeps a checkpoint and contiguous commits.
    ``retention_ms`` (DROP FEATURE ... TRUNCATE HISTORY) overrides the table's retention
    and ``delta.enableExpiredLogCleanup``. Returns how many files were deleted.
    """
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    if retention_ms is None and snapshot.configuration.get("delta.enableExpiredLogCleanup", "true").lower() != "true":
        return 0
    retention = (
        retention_ms
        if retention_ms is not None
        else parse_interval_ms(snapshot.configuration.get("delta.logRetentionDuration", DEFAULT_LOG_RETENTION))
    )
    cutoff = now_ms - retention
    log_dir = f"{snapshot.table_root}/{LOG_DIR}"
    files = [f for f in list_log(storage, log_dir) if f.version <= snapshot.version]
    commit_times = _monotonic_commit_times(files)
    expired_checkpoints = [
        f.version
        for f in files
        if f.kind is LogFileKind.CHECKPOINT and commit_times.get(f.version, f.status.modification_time) <= cutoff
    ]
    if not expired_checkpoints:
        return 0
    boundary = max(expired_checkpoints)
    deleted = 0
    for f in files:
        end = f.end_version if f.kind is LogFileKind.COMPACTION else f.version
        if end is not None and end < boundary:
            storage.delete(f.path)
            deleted += 1
    for status in storage.list_from(f"{log_dir}/."):
        # Hadoop's ``.N.json.crc`` beside commits, and the version checksums ``N.crc``.
        name = status.name
        version_part = name[1:21] if name.startswith(".") else name[:20]
        if name.endswith(".crc") and version_part.isdigit() and int(version_part) < boundary:
            storage.delete(status.path)
    if deleted:
        log.info("%s: removed %d expired log files below version %d", snapshot.table_root, deleted, boundary)
    return deleted

"""Writing checkpoints and cleaning up expired log files.

Checkpoints use delta-spark's classic single-file Parquet layout
(``actions.CHECKPOINT_SCHEMA``) so every Delta reader can start from them. They are
written atomically (temp file then rename), then ``_last_checkpoint`` is updated; a crash
in between leaves at worst an unused checkpoint, never an unreadable table.
"""

from __future__ import annotations

import io
import json
import logging
import re
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import actions as A
from .log_files import LAST_CHECKPOINT, LOG_DIR, LogFileKind, classic_checkpoint_name
from .log_segment import list_log
from .snapshot import Snapshot
from .storage import Storage

log = logging.getLogger(__name__)

DEFAULT_CHECKPOINT_INTERVAL = 10
DEFAULT_LOG_RETENTION = "interval 30 days"
DEFAULT_TOMBSTONE_RETENTION = "interval 1 week"

_UNITS_MS = {
    "millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000, "week": 604_800_000,
}


def parse_interval_ms(text: str) -> int:
    """Milliseconds in a Delta interval property such as ``interval 30 days``."""
    match = re.fullmatch(r"\s*(?:interval\s+)?(\d+)\s*([a-z]+?)s?\s*", text.lower())
    if not match or match.group(2) not in _UNITS_MS:
        raise ValueError(f"cannot parse interval {text!r}: expected e.g. 'interval 30 days'")
    return int(match.group(1)) * _UNITS_MS[match.group(2)]


def checkpoint_interval(configuration: dict[str, str]) -> int:
    return max(1, int(configuration.get("delta.checkpointInterval", DEFAULT_CHECKPOINT_INTERVAL)))


def _rows(column: str, values: pa.Array, num_rows: int) -> pa.Table:
    """A checkpoint table where ``column`` holds ``values`` and every other column is null."""
    arrays = [values if f.name == column else pa.nulls(num_rows, f.type) for f in A.CHECKPOINT_SCHEMA]
    return pa.Table.from_arrays(arrays, schema=A.CHECKPOINT_SCHEMA)


def _small(column: str, items: list[dict]) -> pa.Table:
    return _rows(column, pa.array(items, type=A.CHECKPOINT_SCHEMA.field(column).type), len(items))


def checkpoint_table(snapshot: Snapshot, now_ms: int | None = None) -> pa.Table:
    """The checkpoint rows for ``snapshot``: protocol, metadata, txns, domains, adds, live tombstones."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    retention = parse_interval_ms(snapshot.configuration.get("delta.deletedFileRetentionDuration", DEFAULT_TOMBSTONE_RETENTION))
    metadata = snapshot.metadata.to_dict()
    metadata["format"]["options"] = list(metadata["format"]["options"].items())
    metadata["configuration"] = list(metadata["configuration"].items())
    parts = [
        _small("protocol", [snapshot.protocol.to_dict()]),
        _small("metaData", [metadata]),
        _small("txn", [t.to_dict() for t in snapshot.app_transactions.values()]),
        _small("domainMetadata", [d.to_dict() for d in snapshot.domain_metadata.values()]),
    ]
    files = snapshot.files
    if files.num_rows:
        adds = pa.StructArray.from_arrays([c.combine_chunks() for c in files.columns], fields=list(A.ADD))
        parts.append(_rows("add", adds, len(adds)))
    tombstones = snapshot.tombstones
    if tombstones.num_rows:
        keep = pc.greater(pc.fill_null(tombstones.column("deletionTimestamp"), 0), now_ms - retention)
        live = tombstones.filter(keep)
        if live.num_rows:
            removes = pa.StructArray.from_arrays([c.combine_chunks() for c in live.columns], fields=list(A.REMOVE))
            parts.append(_rows("remove", removes, len(removes)))
    return pa.concat_tables(parts)


def write_checkpoint(storage: Storage, snapshot: Snapshot) -> dict:
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


def cleanup_expired_logs(storage: Storage, snapshot: Snapshot, now_ms: int | None = None) -> int:
    """Delete commits and checkpoints older than ``delta.logRetentionDuration``.

    Only files below the newest checkpoint that is itself older than the cutoff go, so
    every version newer than the cutoff keeps a checkpoint and contiguous commits.
    Returns how many files were deleted.
    """
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    if snapshot.configuration.get("delta.enableExpiredLogCleanup", "true").lower() != "true":
        return 0
    retention = parse_interval_ms(snapshot.configuration.get("delta.logRetentionDuration", DEFAULT_LOG_RETENTION))
    cutoff = now_ms - retention
    log_dir = f"{snapshot.table_root}/{LOG_DIR}"
    files = [f for f in list_log(storage, log_dir) if f.version <= snapshot.version]
    commit_times = {f.version: f.status.modification_time for f in files if f.kind is LogFileKind.COMMIT}
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
        name = status.name
        if name.startswith(".") and name.endswith(".crc"):
            version_part = name[1:21]
            if version_part.isdigit() and int(version_part) < boundary:
                storage.delete(status.path)
    if deleted:
        log.info("%s: removed %d expired log files below version %d", snapshot.table_root, deleted, boundary)
    return deleted

"""A snapshot: the table's state at one version, rebuilt from a log segment."""

from __future__ import annotations

import io
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import cached_property, partial

import pyarrow as pa
import pyarrow.compute as pc

from .actions import DomainMetadata, Metadata, Protocol, SetTransaction
from .errors import InvalidLogError
from .log_files import LOG_DIR, SIDECAR_DIR, LogFile, commit_name
from .log_segment import LogSegment, build_log_segment
from .parsing import ActionBatch, parse_json_actions, parse_parquet_actions
from .protocol import KERNEL_READER_FEATURES, check_protocol_valid, require_readable
from .replay import FileState, reconcile
from .schema import StructType
from .storage import Storage

log = logging.getLogger(__name__)


def _read_checkpoint(storage: Storage, log_dir: str, part: LogFile) -> list[ActionBatch]:
    """A checkpoint part and, for V2 checkpoints, the sidecars it names."""
    if part.path.endswith(".json"):
        batch = parse_json_actions(storage.read(part.path), part.version, is_checkpoint=True)
    else:
        local = storage.local_path(part.path)
        batch = parse_parquet_actions(local if local else io.BytesIO(storage.read(part.path)), part.version)
    batches = [batch]
    for sidecar in batch.sidecars:
        path = sidecar["path"]
        full = path if "/" in path else f"{log_dir}/{SIDECAR_DIR}/{path}"
        local = storage.local_path(full)
        batches.append(
            parse_parquet_actions(local if local else io.BytesIO(storage.read(full)), part.version, file_actions_only=True)
        )
    return batches


class _ParsedLogCache:
    """Parsed log files by (path, size, mtime): commits never change once written.

    Successive snapshots of a table (every transaction takes one) then parse only the
    commits that are new. Checkpoints hold the whole file state, so few are kept.
    """

    def __init__(self, max_commits: int = 512, max_checkpoints: int = 2) -> None:
        self._limits = {False: max_commits, True: max_checkpoints}
        self._entries: dict[bool, OrderedDict[tuple[str, int, int], list[ActionBatch]]] = {
            False: OrderedDict(),
            True: OrderedDict(),
        }
        self._lock = threading.Lock()

    def get(self, file: LogFile, parse: Callable[[], list[ActionBatch]]) -> list[ActionBatch]:
        key = (file.path, file.status.size, file.status.modification_time)
        entries = self._entries[file.is_checkpoint]
        with self._lock:
            if key in entries:
                entries.move_to_end(key)
                return entries[key]
        batches = parse()
        with self._lock:
            entries[key] = batches
            while len(entries) > self._limits[file.is_checkpoint]:
                entries.popitem(last=False)
        return batches

    def clear(self) -> None:
        with self._lock:
            for entries in self._entries.values():
                entries.clear()


_cache = _ParsedLogCache()


def clear_log_cache() -> None:
    """Forget parsed log files (benchmarks use it to measure cold loads)."""
    _cache.clear()


def load_batches(storage: Storage, segment: LogSegment) -> list[ActionBatch]:
    """Every batch of a segment, newest first."""
    log_dir = f"{segment.table_root}/{LOG_DIR}"
    batches: list[ActionBatch] = []
    for delta in reversed(segment.deltas):
        version = delta.end_version or delta.version
        batches.extend(_cache.get(delta, partial(_read_delta, storage, delta, version)))
    for part in segment.checkpoint:
        batches.extend(_cache.get(part, partial(_read_checkpoint, storage, log_dir, part)))
    return batches


def _read_delta(storage: Storage, delta: LogFile, version: int) -> list[ActionBatch]:
    return [parse_json_actions(storage.read(delta.path), version)]


class Snapshot:
    """Protocol, metadata and files of a table at ``version``.

    File state is an Arrow table in the checkpoint's ``add`` layout, computed on first use.
    """

    def __init__(self, storage: Storage, segment: LogSegment, batches: list[ActionBatch]) -> None:
        self.storage = storage
        self.segment = segment
        self.table_root = segment.table_root
        self.version = segment.version
        self._batches = batches
        protocol = next((b.protocol for b in batches if b.protocol is not None), None)
        metadata = next((b.metadata for b in batches if b.metadata is not None), None)
        if protocol is None:
            raise InvalidLogError(f"{self.table_root}: no protocol action in the log up to version {self.version}")
        if metadata is None:
            raise InvalidLogError(f"{self.table_root}: no metaData action in the log up to version {self.version}")
        self.protocol = Protocol.from_dict(protocol)
        self.metadata = Metadata.from_dict(metadata)
        check_protocol_valid(self.protocol, f"{self.table_root} (version {self.version})")
        self.app_transactions = _latest_app_transactions(batches)
        self.domain_metadata = _live_domains(batches)
        newest = batches[0] if batches else None
        self._newest_commit_info = (
            newest.commit_info if newest and not newest.is_checkpoint and newest.version == self.version else None
        )

    @classmethod
    def load(cls, storage: Storage, table_root: str, version: int | None = None) -> Snapshot:
        """Build the snapshot, falling back past a checkpoint that cannot be read."""
        segment = build_log_segment(storage, table_root, version)
        while True:
            try:
                batches = load_batches(storage, segment)
            except (OSError, pa.ArrowException, ValueError) as exc:
                if segment.checkpoint_version is None:
                    raise InvalidLogError(f"{table_root}: cannot read the log at version {segment.version}: {exc}") from exc
                log.warning(
                    "%s: checkpoint %d unreadable (%s); replaying from an earlier one",
                    table_root,
                    segment.checkpoint_version,
                    exc,
                )
                segment = build_log_segment(storage, table_root, version, skip_checkpoints_from=segment.checkpoint_version)
                continue
            return cls(storage, segment, batches)

    def require_readable(self, supported: frozenset[str] | None = None) -> None:
        """Refuse, naming the features, if the table needs reader features we lack."""
        table = f"{self.table_root} (version {self.version})"
        require_readable(self.protocol, table, KERNEL_READER_FEATURES if supported is None else supported)

    @property
    def schema(self) -> StructType:
        return self.metadata.schema

    @property
    def partition_columns(self) -> tuple[str, ...]:
        return self.metadata.partition_columns

    @property
    def configuration(self) -> dict[str, str]:
        return self.metadata.configuration

    @cached_property
    def _file_state(self) -> FileState:
        state = reconcile(self._batches, self.table_root)
        self._batches = []
        return state

    @property
    def files(self) -> pa.Table:
        """Active files: one row per ``add``, columns as in the checkpoint's add struct."""
        return self._file_state.active

    @property
    def tombstones(self) -> pa.Table:
        """Removed files still remembered by the log (for VACUUM and checkpoints)."""
        return self._file_state.tombstones

    @cached_property
    def commit_info(self) -> dict | None:
        """This version's commitInfo (read from its commit when a checkpoint or compaction covers it)."""
        if self._newest_commit_info is not None:
            return self._newest_commit_info
        try:
            data = self.storage.read(f"{self.table_root}/{LOG_DIR}/{commit_name(self.version)}")
        except FileNotFoundError:
            return None
        return parse_json_actions(data, self.version).commit_info

    @property
    def timestamp(self) -> int:
        """Commit timestamp in epoch millis: inCommitTimestamp if enabled, else file time."""
        info = self.commit_info
        if self.in_commit_timestamps_enabled and info and "inCommitTimestamp" in info:
            return int(info["inCommitTimestamp"])
        return self.segment.commit_timestamps.get(self.version, 0)

    @property
    def in_commit_timestamps_enabled(self) -> bool:
        return self.configuration.get("delta.enableInCommitTimestamps", "false").lower() == "true"

    @property
    def num_files(self) -> int:
        return self.files.num_rows

    @property
    def size_in_bytes(self) -> int:
        return int(pc.sum(self.files.column("size")).as_py() or 0)

    def file_paths(self) -> list[str]:
        """Active file paths as written in the log (URL-encoded, usually relative)."""
        return self.files.column("path").to_pylist()

    def __repr__(self) -> str:
        return f"Snapshot({self.table_root!r}, version={self.version})"


def _latest_app_transactions(batches: list[ActionBatch]) -> dict[str, SetTransaction]:
    """Latest ``txn`` version per application id."""
    result: dict[str, SetTransaction] = {}
    for batch in reversed(batches):
        for txn in batch.txns:
            result[txn["appId"]] = SetTransaction(txn["appId"], int(txn["version"]), txn.get("lastUpdated"))
    return result


def _live_domains(batches: list[ActionBatch]) -> dict[str, DomainMetadata]:
    """Domain metadata by name, newest wins, removed ones dropped."""
    result: dict[str, DomainMetadata] = {}
    for batch in reversed(batches):
        for d in batch.domains:
            result[d["domain"]] = DomainMetadata(d["domain"], d.get("configuration") or "", bool(d.get("removed")))
    return {k: v for k, v in result.items() if not v.removed}

"""A snapshot: the table's state at one version, rebuilt from a log segment."""

from __future__ import annotations

import io
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property, partial
from typing import Any, TypeVar, cast

import pyarrow as pa
import pyarrow.compute as pc

from . import checksum
from .actions import DomainMetadata, Metadata, Protocol, SetTransaction
from .errors import DamagedCheckpointError, InvalidLogError, VersionNotFoundError
from .log_files import LOG_DIR, SIDECAR_DIR, LogFile, commit_name
from .log_segment import LogSegment, build_log_segment
from .parsing import ActionBatch, FileActions, FileActionsLoader, check_file_actions, parse_json_actions, parse_parquet_actions
from .protocol import KERNEL_READER_FEATURES, check_protocol_valid, require_readable
from .replay import FileState, reconcile
from .scan import Scan
from .schema import StructType
from .skipping import Predicate
from .storage import Storage

_T = TypeVar("_T")

# How a damaged file surfaces: Arrow and Parquet decoding (Parquet reports some damage as an
# OSError), bad values. A failed read is no damage: see ``_is_read_failure``.
_DECODING_ERRORS = (OSError, pa.ArrowException, ValueError, TypeError, KeyError, InvalidLogError)


def _is_read_failure(exc: Exception) -> bool:
    """Whether ``exc``, raised while decoding a checkpoint, is a failed read, not damage.

    Bytes from ``Storage.read`` are read before decoding starts, so its errors (the kernel's
    StorageError, a reset connection) never get here. Arrow reading a local file itself
    reports the OS's errors with their errno; its decoding errors carry none. A failed read
    propagates, and the next snapshot reads the file again instead of skipping it as damaged.
    """
    return isinstance(exc, OSError) and exc.errno is not None


def _checked(load: FileActionsLoader, part: LogFile, path: str) -> FileActionsLoader:
    """``load`` whose failures, when the adds are first decoded, name the damaged checkpoint file."""

    def checked(add_fields: Sequence[str] | None) -> FileActions:
        try:
            actions = load(add_fields)
            check_file_actions(actions)
        except _DECODING_ERRORS as exc:
            if _is_read_failure(exc):
                raise
            raise DamagedCheckpointError(part, path, exc) from exc
        return actions

    return checked


def _parquet_part(storage: Storage, path: str, part: LogFile, file_actions_only: bool) -> ActionBatch:
    local = storage.local_path(path)
    source = local if local else io.BytesIO(storage.read(path))
    try:
        batch = parse_parquet_actions(source, part.version, file_actions_only)
    except _DECODING_ERRORS as exc:
        if _is_read_failure(exc):
            raise
        raise DamagedCheckpointError(part, path, exc) from exc
    return batch


def _read_checkpoint(storage: Storage, log_dir: str, part: LogFile) -> list[ActionBatch]:
    """A checkpoint part and, for V2 checkpoints, the sidecars it names.

    File actions are decoded lazily; a failure then still raises ``DamagedCheckpointError``.
    """
    if part.path.endswith(".json"):
        data = storage.read(part.path)
        try:
            batch = parse_json_actions(data, part.version, is_checkpoint=True)
        except _DECODING_ERRORS as exc:
            raise DamagedCheckpointError(part, part.path, exc) from exc
    else:
        batch = _parquet_part(storage, part.path, part, file_actions_only=False)
    batch.load_file_actions = _checked(batch.load_file_actions, part, part.path)
    batches = [batch]
    for sidecar in batch.sidecars:
        path = sidecar["path"]
        full = path if "/" in path else f"{log_dir}/{SIDECAR_DIR}/{path}"
        sidecar_batch = _parquet_part(storage, full, part, file_actions_only=True)
        sidecar_batch.load_file_actions = _checked(sidecar_batch.load_file_actions, part, full)
        batches.append(sidecar_batch)
    return batches


_Key = tuple[str, int, int, str | None]


class _ParsedLogCache:
    """Parsed log files by (path, size, mtime, identity): commits never change once written.

    The identity (``FileStatus.identity``) keeps a table deleted and built again at the same
    path, whose commits may have the same sizes and times, from being read from the cache.

    Successive snapshots of a table (every transaction takes one) then parse only the
    commits that are new. Checkpoints hold the whole file state, so few are kept.
    """

    def __init__(self, max_commits: int = 512, max_checkpoints: int = 2) -> None:
        self._limits = {False: max_commits, True: max_checkpoints}
        self._entries: dict[bool, OrderedDict[_Key, list[ActionBatch]]] = {
            False: OrderedDict(),
            True: OrderedDict(),
        }
        self._damaged: dict[_Key, Exception] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(file: LogFile) -> _Key:
        return (file.path, file.status.size, file.status.modification_time, file.status.identity)

    def mark_damaged(self, file: LogFile, cause: Exception) -> None:
        """Remember a checkpoint that failed to decode, and why, so later snapshots skip it at once."""
        with self._lock:
            self._damaged[self._key(file)] = cause
            self._entries[True].pop(self._key(file), None)

    def damage(self, file: LogFile) -> Exception | None:
        """Why ``file`` failed to decode before, or None."""
        return self._damaged.get(self._key(file))

    def get(self, file: LogFile, parse: Callable[[], list[ActionBatch]]) -> list[ActionBatch]:
        key = self._key(file)
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
            self._damaged.clear()
            for entries in self._entries.values():
                entries.clear()


_cache = _ParsedLogCache()
_REMOTE_READS = 8
"""Log files read at once from an object store (delta-rs reads concurrently too)."""


def clear_log_cache() -> None:
    """Forget parsed log files (benchmarks use it to measure cold loads)."""
    _cache.clear()


def load_batches(storage: Storage, segment: LogSegment) -> list[ActionBatch]:
    """Every batch of a segment, newest first."""
    log_dir = f"{segment.table_root}/{LOG_DIR}"
    batches: list[ActionBatch] = []
    loads: list[Callable[[], list[ActionBatch]]] = []
    for delta in reversed(segment.deltas):
        version = delta.end_version or delta.version
        loads.append(partial(_cache.get, delta, partial(_read_delta, storage, segment.table_root, delta, version)))
    for part in segment.checkpoint:
        cause = _cache.damage(part)
        if cause is not None:
            loads.append(partial(_raise_damaged, part, cause))
            break
        loads.append(partial(_cache.get, part, partial(_read_checkpoint, storage, log_dir, part)))
    if len(loads) > 1 and storage.local_path(f"{log_dir}/{commit_name(segment.version)}") is None:
        # On an object store every file costs a round trip: read them all at once. Results
        # (and the first error) still come in log order, as in the sequential reading.
        with ThreadPoolExecutor(min(len(loads), _REMOTE_READS)) as pool:
            futures = [pool.submit(load) for load in loads]
            loads = [future.result for future in futures]
    for load in loads:
        batches.extend(load())
    return batches


def _raise_damaged(part: LogFile, cause: Exception) -> list[ActionBatch]:
    raise DamagedCheckpointError(part, part.path, cause)


def _read_delta(storage: Storage, table_root: str, delta: LogFile, version: int) -> list[ActionBatch]:
    try:
        data = storage.read(delta.path)
    except OSError as exc:
        raise InvalidLogError(f"{table_root}: version {version} cannot be read from {delta.path}: {exc}") from exc
    return [_decode_commit(data, table_root, delta.path, version)]


def _decode_commit(data: bytes, table_root: str, path: str, version: int) -> ActionBatch:
    """A commit decoded whole, file actions included, and checked.

    Commits are small and parsed once (then cached), so decoding eagerly is cheap, and it
    means no write builds on a version whose actions could not be read.
    """
    try:
        batch = parse_json_actions(data, version)
        check_file_actions(batch.file_actions)
    except _DECODING_ERRORS as exc:
        raise InvalidLogError(f"{table_root}: version {version} cannot be read from {path}: {exc}") from exc
    return batch


def _segment_past(storage: Storage, segment: LogSegment, damaged: DamagedCheckpointError) -> LogSegment:
    """The segment for the same version without the damaged checkpoint: an earlier one, or commits only.

    Warns, naming the damaged file, and remembers it so later snapshots go straight to the
    fallback. When the commits the fallback needs were cleaned up, raises InvalidLogError
    naming the table, version and file, and remembers nothing: the next snapshot decodes
    the checkpoint again and reports its own cause.
    """
    where = f"{segment.table_root}: version {segment.version}"
    try:
        fallback = build_log_segment(storage, segment.table_root, segment.version, skip_checkpoints_from=damaged.part.version)
    except (VersionNotFoundError, InvalidLogError) as exc:
        raise InvalidLogError(
            f"{where} cannot be read: checkpoint file {damaged.path} is damaged ({damaged.cause}) "
            f"and nothing else rebuilds it: {exc}"
        ) from damaged
    _cache.mark_damaged(damaged.part, damaged.cause)
    source = "the JSON commits" if fallback.checkpoint_version is None else f"checkpoint {fallback.checkpoint_version}"
    warnings.warn(
        f"{where}: checkpoint file {damaged.path} is damaged ({damaged.cause}); reading from {source} instead",
        RuntimeWarning,
        stacklevel=2,
    )
    return fallback


def _readable_batches(storage: Storage, segment: LogSegment) -> tuple[LogSegment, list[ActionBatch]]:
    """The segment's batches, replaying past every checkpoint whose non-file actions fail to decode."""
    while True:
        try:
            return segment, load_batches(storage, segment)
        except DamagedCheckpointError as damaged:
            segment = _segment_past(storage, segment, damaged)


class Snapshot:
    """Protocol, metadata and files of a table at ``version``.

    File state is an Arrow table in the checkpoint's ``add`` layout, computed on first use.
    A snapshot is immutable: its fields are read-only, so one snapshot can be shared (by
    a scan and the commands built on it, across threads) and a transaction's read snapshot
    is the table as read. A command that commits new metadata passes it along explicitly
    (see ``DmlCommit.set_metadata``) instead of patching a snapshot.
    """

    def __init__(self, storage: Storage, segment: LogSegment, batches: list[ActionBatch]) -> None:
        self._storage = storage
        self._segment = segment
        self._batches = batches
        root, version = segment.table_root, segment.version
        protocol = next((b for b in batches if b.protocol is not None), None)
        if protocol is None:
            raise InvalidLogError(f"{root}: no protocol action in the log up to version {version}")
        if not any(b.metadata is not None for b in batches):
            raise InvalidLogError(f"{root}: no metaData action in the log up to version {version}")
        self._protocol = _named(segment, protocol, partial(Protocol.from_dict, cast(dict[str, Any], protocol.protocol)))
        self._metadata = _checked_metadata(segment, batches)
        check_protocol_valid(self._protocol, f"{root} (version {version})")
        self._app_transactions = _latest_app_transactions(batches)
        self._domain_metadata = _live_domains(batches)
        newest = batches[0] if batches else None
        self._newest_commit_info = (
            newest.commit_info if newest and not newest.is_checkpoint and newest.version == self.version else None
        )

    @classmethod
    def load(cls, storage: Storage, table_root: str, version: int | None = None) -> Snapshot:
        """Build the snapshot, falling back past a checkpoint that cannot be read."""
        segment, batches = _readable_batches(storage, build_log_segment(storage, table_root, version))
        return cls(storage, segment, batches)

    @staticmethod
    def read_commit(storage: Storage, table_root: str, version: int) -> ActionBatch:
        """One commit, checked as snapshots check it (FileNotFoundError when it does not exist).

        Writers read concurrent winners with it, so none rebases onto a malformed commit.
        """
        path = f"{table_root}/{LOG_DIR}/{commit_name(version)}"
        return _decode_commit(storage.read(path), table_root, path, version)

    @property
    def storage(self) -> Storage:
        return self._storage

    @property
    def segment(self) -> LogSegment:
        """The log files this snapshot is read from (past a damaged checkpoint, once found)."""
        return self._segment

    @property
    def table_root(self) -> str:
        return self._segment.table_root

    @property
    def version(self) -> int:
        return self._segment.version

    @property
    def protocol(self) -> Protocol:
        return self._protocol

    @property
    def metadata(self) -> Metadata:
        return self._metadata

    @property
    def app_transactions(self) -> dict[str, SetTransaction]:
        """The latest ``txn`` per application id."""
        return self._app_transactions

    @property
    def domain_metadata(self) -> dict[str, DomainMetadata]:
        """Live domain metadata by domain name."""
        return self._domain_metadata

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

    def _reconcile(self, add_fields: Sequence[str] | None) -> FileState:
        """``reconcile`` of this snapshot's log. A checkpoint's adds are decoded only now, so
        damage found here also replays past the checkpoint (``segment`` then names the log
        files used)."""
        while True:
            try:
                return reconcile(self._batches, self.table_root, add_fields)
            except DamagedCheckpointError as damaged:
                self._segment, self._batches = _readable_batches(self.storage, _segment_past(self.storage, self.segment, damaged))

    @cached_property
    def _file_state(self) -> FileState:
        """Reconciled files, every field; the log's batches are let go. The state is checked
        against the version's checksum file where there is one."""
        state = self._reconcile(None)
        self._batches = []
        self.__dict__["_file_state"] = state  # what the check reads
        self._check_against_checksum()
        return state

    def _check_against_checksum(self) -> None:
        """Warn, naming the version, where the replayed state and the version's checksum disagree
        (PROTOCOL.md, "State Validation"): the log may have been changed after the fact."""
        recorded = checksum.read_checksum(self.storage, self.table_root, self.version)
        found = checksum.mismatches(self, recorded) if recorded is not None else []
        if found:
            warnings.warn(
                f"{self.table_root}: version {self.version} does not match its checksum file "
                f"({'; '.join(found)}); the log may have been modified after it was written",
                RuntimeWarning,
                stacklevel=2,
            )

    @property
    def files(self) -> pa.Table:
        """Active files: one row per ``add``, columns as in the checkpoint's add struct."""
        return self._file_state.active

    def loaded_paths(self) -> frozenset[str] | None:
        """The live files' paths if this snapshot has reconciled its files already, else None (nothing is read)."""
        if "_file_state" not in self.__dict__:
            return None
        return frozenset(cast(list[str], self.files.column("path").to_pylist()))

    def active_files(self, columns: Sequence[str]) -> pa.Table:
        """``files.select(columns)``, without decoding the other columns of a checkpoint's adds
        when ``files`` is not computed yet (nothing is kept): counting, sizing or listing
        100,000 files then never decodes their stats, most of the checkpoint's bytes."""
        if "_file_state" in self.__dict__:
            return self.files.select(list(columns))
        return self._reconcile(columns).active.select(list(columns))

    def scan(self, predicate: Predicate | None = None, columns: Sequence[str] | None = None) -> Scan:
        """The files a read of ``columns`` (None: all) filtered by ``predicate`` needs (see ``kernel.scan``).

        Every engine read, DML candidate search and compaction picks its files here.
        """
        return Scan(self, predicate, columns)

    @property
    def tombstones(self) -> pa.Table:
        """Removed files still remembered by the log (for VACUUM and checkpoints)."""
        return self._file_state.tombstones

    @cached_property
    def commit_info(self) -> dict[str, Any] | None:
        """This version's commitInfo (read from its commit when a checkpoint or compaction covers it).

        A copy: the parsed commit is shared through the process-wide log cache."""
        if self._newest_commit_info is not None:
            return dict(self._newest_commit_info)
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
        return cast(list[str], self.files.column("path").to_pylist())

    def __repr__(self) -> str:
        return f"Snapshot({self.table_root!r}, version={self.version})"


def _log_file(segment: LogSegment, batch: ActionBatch) -> str:
    """The log file ``batch`` was read from (every part, for a checkpoint), for messages."""
    if batch.is_checkpoint:
        return ", ".join(part.path for part in segment.checkpoint)
    return next((d.path for d in segment.deltas if (d.end_version or d.version) == batch.version), "")


def _named(segment: LogSegment, batch: ActionBatch, decode: Callable[[], _T]) -> _T:
    """``decode()``, its failure an InvalidLogError naming table, version and file, as commits' are."""
    try:
        return decode()
    except _DECODING_ERRORS as exc:
        raise InvalidLogError(
            f"{segment.table_root}: version {batch.version} cannot be read from {_log_file(segment, batch)}: {exc}"
        ) from exc


def _checked_metadata(segment: LogSegment, batches: list[ActionBatch]) -> Metadata:
    """The metadata in force (the newest), decoded now, schema included, so a bad one fails
    naming its version and file rather than later, unnamed."""
    batch = next(b for b in batches if b.metadata is not None)  # the caller made sure one exists
    return _named(segment, batch, partial(_decoded_metadata, cast(dict[str, Any], batch.metadata)))


def _decoded_metadata(raw: dict[str, Any]) -> Metadata:
    """``Metadata.from_dict`` with its schema parsed now (it is parsed lazily otherwise)."""
    metadata = Metadata.from_dict(raw)
    metadata.schema  # noqa: B018 - parse errors surface here, named by the caller
    return metadata


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

"""Transactions: optimistic commits with put-if-absent, conflict checks and retries.

A transaction reads snapshot ``r`` and tries to write ``r+1.json``. If another writer
got there first, the winning commits are checked for logical conflicts
(``conflicts.check_winning_commit``); without one the commit is retried at the next
free version. After a successful commit, a checkpoint is written every
``delta.checkpointInterval`` versions and expired log files are cleaned up, and the
symlink manifests are updated where the table keeps them (``manifest.py``).

A transaction knows whether its commit landed (``CommitState``): a writer deletes the
data files it wrote for a failed commit only once the log proves the commit is not
there, since after a commit file appears those files are the table's. A write whose
outcome is ambiguous (the store raised, or the user interrupted, while the commit file
was being written) is resolved by reading that version back and comparing it with what
was written.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from .. import __version__
from . import checksum, column_mapping, manifest, row_tracking
from .actions import (
    Action,
    AddCDCFile,
    AddFile,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    action_line,
)
from .checkpoint import checkpoint_interval, cleanup_expired_logs, write_checkpoint
from .checksum import VersionChecksum
from .conflicts import IsolationLevel, ReadSet, WriteSet, check_winning_commit
from .errors import (
    ConcurrentWriteException,
    InvalidTableOperationError,
    PostCommitHookError,
    ProtocolChangedException,
)
from .file_paths import canonical_paths
from .log_files import commit_name
from .log_segment import list_log
from .metadata_change import prepare
from .parsing import parse_json_actions
from .protocol import (
    check_no_feature_removed,
    check_protocol_shape,
    is_feature_enabled,
    require_writable,
    writer_features,
)
from .snapshot import Snapshot
from .storage import Storage

log = logging.getLogger(__name__)

ENGINE_INFO = f"sparkdelta/{__version__}"
MAX_COMMIT_ATTEMPTS = 10_000


class CommitState(Enum):
    """Whether a transaction's actions are in the log, as far as the log proves it."""

    NOT_ATTEMPTED = "not attempted"  # no commit file write was started
    NOT_COMMITTED = "not committed"  # every write was read back and is not ours
    COMMITTED = "committed"
    UNKNOWN = "unknown"  # a write failed and the log could not be read back


@dataclass(frozen=True)
class CommitResult:
    version: int
    commit_info: dict[str, Any]
    attempts: int
    checkpointed: bool


class Transaction:
    """One atomic change to a table. Build it, record what it read, then ``commit``."""

    def __init__(
        self,
        storage: Storage,
        table_root: str,
        read_snapshot: Snapshot | None,
        isolation_level: IsolationLevel = IsolationLevel.SERIALIZABLE,
    ) -> None:
        self.storage = storage
        self.table_root = table_root
        self.read_snapshot = read_snapshot
        self.isolation_level = isolation_level
        self.reads = ReadSet()
        self.txn_id = str(uuid.uuid4())
        self.dropping_feature: str | None = None
        self.state = CommitState.NOT_ATTEMPTED
        self.committed_version: int | None = None
        # The row-id high-water mark as of the last version seen (the read one, then winners').
        self._row_id_mark = row_tracking.high_water_mark(read_snapshot.domain_metadata) if read_snapshot else row_tracking.NO_ROWS

    @property
    def may_discard_files(self) -> bool:
        """Whether files written for this transaction may be deleted: the log proves no
        version of it landed. Once a commit may exist, its files belong to the table."""
        return self.state in (CommitState.NOT_ATTEMPTED, CommitState.NOT_COMMITTED)

    @property
    def read_version(self) -> int:
        return self.read_snapshot.version if self.read_snapshot is not None else -1

    def mark_read_whole_table(self) -> None:
        """The outcome depends on every file (e.g. an unpartitioned DELETE)."""
        self.reads.whole_table = True

    def mark_read_predicate(self, predicate: pc.Expression) -> None:
        """The outcome depends on files whose partition values match ``predicate``."""
        self.reads.predicates.append(predicate)

    def mark_files_read(self, paths: Iterable[str]) -> None:
        """The outcome depends on these files (paths as in the log) staying in the table."""
        self.reads.files.update(cast(list[str], canonical_paths(pa.array(list(paths), pa.string()), self.table_root).to_pylist()))

    def mark_app_transaction_read(self, app_id: str) -> None:
        """The transaction checked this application's last committed version."""
        self.reads.app_ids.add(app_id)

    def commit(
        self,
        actions: Sequence[Action],
        operation: str,
        operation_parameters: dict[str, Any] | None = None,
        operation_metrics: dict[str, Any] | None = None,
        user_metadata: str | None = None,
        tags: dict[str, str] | None = None,
    ) -> CommitResult:
        """Write the actions as the next version; retry past non-conflicting winners.

        A metadata action that needs more than the protocol supports carries the protocol
        upgrade in the same commit (as delta-spark's transactions do). ``tags`` go to the
        commitInfo's ``tags`` (delta-spark's, e.g. ``delta.identity.schemaUpdate``).
        """
        actions = self._with_prepared_metadata(actions)
        protocol = next((a for a in actions if isinstance(a, Protocol)), None)
        metadata = next((a for a in actions if isinstance(a, Metadata)), None)
        effective_protocol = protocol or (self.read_snapshot.protocol if self.read_snapshot else None)
        effective_metadata = metadata or (self.read_snapshot.metadata if self.read_snapshot else None)
        if effective_protocol is None or effective_metadata is None:
            raise InvalidTableOperationError(
                f"{self.table_root}: the first commit of a table must contain protocol and metaData actions"
            )
        if self.read_snapshot is not None:
            require_writable(self.read_snapshot.protocol, self.read_snapshot.metadata, self.table_root)
        require_writable(effective_protocol, effective_metadata, self.table_root)
        if protocol is not None:
            check_protocol_shape(protocol, self.table_root)
            if self.read_snapshot is not None:
                check_no_feature_removed(self.read_snapshot.protocol, protocol, self.table_root, self.dropping_feature)
        if metadata is not None:
            column_mapping.validate(metadata, self._previous_metadata(metadata), self.table_root)
            manifest.check_properties(metadata, self.read_snapshot)
            if self.read_snapshot is not None:
                row_tracking.check_enablement(actions, self.read_snapshot, effective_protocol, metadata)
        # As delta-spark's ``assertRemovable``: the table as read decides (a replace may turn it on).
        self._check_append_only(actions, self.read_snapshot.metadata if self.read_snapshot else effective_metadata)
        self._check_domains(actions, effective_protocol)

        isolation = _isolation_for(actions, self.isolation_level)
        removes = [a for a in actions if isinstance(a, RemoveFile)]
        # delta-spark's rule: only adds among the file actions, and nothing read. A metadata or
        # protocol change does not count (CREATE TABLE is a blind append); conflict checks
        # refuse a winner that changed either before they look at this flag.
        blind_append = not removes and not self.reads.whole_table and not self.reads.predicates and not self.reads.files
        writes = WriteSet(
            removed_paths=frozenset(
                cast(list[str], canonical_paths(pa.array([r.path for r in removes], pa.string()), self.table_root).to_pylist())
            ),
            app_ids=frozenset(a.app_id for a in actions if isinstance(a, SetTransaction)),
            domains=frozenset(a.domain for a in actions if isinstance(a, DomainMetadata)),
            changes_metadata=metadata is not None,
            changes_protocol=protocol is not None,
        )
        assigns_row_ids = row_tracking.assigns_ids(effective_protocol, effective_metadata)
        ict_enabled = _ict_enabled(effective_metadata) and is_feature_enabled(effective_protocol, "inCommitTimestamp")
        ict_newly_enabled = (
            ict_enabled
            and metadata is not None
            and self.read_snapshot is not None
            and not _ict_enabled(self.read_snapshot.metadata)
        )
        info: dict[str, Any] = {
            "timestamp": 0,
            "operation": operation,
            "operationParameters": {k: _param(v) for k, v in (operation_parameters or {}).items()},
            "isolationLevel": isolation.value,
            "isBlindAppend": blind_append,
            "operationMetrics": {k: str(v) for k, v in (operation_metrics or {}).items()},
            **({"tags": dict(tags)} if tags else {}),
            "engineInfo": ENGINE_INFO,
            "txnId": self.txn_id,
        }
        if user_metadata is not None:
            info["userMetadata"] = user_metadata
        attempt_version = self.read_version + 1
        for attempt in range(1, MAX_COMMIT_ATTEMPTS + 1):
            self._ensure_log_continues(attempt_version)
            now = int(time.time() * 1000)
            info["timestamp"] = now
            if attempt_version > 0:
                info["readVersion"] = self.read_version
            attempt_actions = list(actions)
            if ict_enabled:
                info["inCommitTimestamp"] = max(now, self._previous_commit_timestamp(attempt_version) + 1)
            if ict_newly_enabled and metadata is not None:
                enablement = {
                    "delta.inCommitTimestampEnablementVersion": str(attempt_version),
                    "delta.inCommitTimestampEnablementTimestamp": str(info["inCommitTimestamp"]),
                }
                enabled = replace(metadata, configuration={**metadata.configuration, **enablement})
                attempt_actions = [enabled if a is metadata else a for a in actions]
            if assigns_row_ids:
                attempt_actions = row_tracking.assign(attempt_actions, self._row_id_mark, attempt_version, self.table_root)
            body = "".join(action_line(a) + "\n" for a in attempt_actions)
            data = (_commit_info_line(info) + "\n" + body).encode()
            if not self._write_commit(attempt_version, data):
                attempt_version = self._resolve_conflicts(attempt_version, writes, effective_metadata, isolation)
                continue
            self._write_checksum(attempt_version, attempt_actions, info, effective_protocol, effective_metadata)
            checkpointed = self._post_commit(attempt_version, effective_metadata)
            self._update_manifests(attempt_version, attempt_actions, effective_metadata)
            return CommitResult(attempt_version, dict(info), attempt, checkpointed)
        raise ConcurrentWriteException(
            f"{self.table_root}: gave up after {MAX_COMMIT_ATTEMPTS} attempts to commit against concurrent writers"
        )

    def _write_commit(self, version: int, data: bytes) -> bool:
        """Put ``data`` as ``version``; whether it is now ours (False: another writer has it).

        Any other failure of the write (an error from the store, an interrupt) leaves the
        outcome open: the version is read back, and is ours if it holds exactly ``data``;
        found absent, it is not ours only where a failed write cannot land later.
        A store client that retried a write which had landed also sees "exists", so that
        answer is checked the same way. The error is raised unless the commit landed;
        an interrupt is raised in any case, with a note saying whether it landed.
        """
        path = f"{self.table_root}/_delta_log/{commit_name(version)}"
        self.state = CommitState.UNKNOWN
        try:
            self.storage.put_if_absent(path, data)
        except FileExistsError:
            landed = self._landed(path, data)
            if landed is None:
                raise
            if not landed:
                self.state = CommitState.NOT_COMMITTED
                return False
        except BaseException as error:
            landed = self._landed(path, data)
            if landed is False and self.storage.failed_writes_are_final:
                self.state = CommitState.NOT_COMMITTED
                raise
            if not landed:
                error.add_note(
                    f"{self.table_root}: whether version {version} was committed is unknown (the log could not be "
                    "read back, or the store may still apply the write); the files written for it are kept, "
                    "VACUUM removes them if it was not"
                )
                raise
            self._mark_committed(version)
            if not isinstance(error, Exception):
                error.add_note(f"{self.table_root}: version {version} was committed before the interruption")
                raise
            log.warning(
                "%s: writing version %d raised %r, but the version is in the log: committed", self.table_root, version, error
            )
            return True
        self._mark_committed(version)
        return True

    def _mark_committed(self, version: int) -> None:
        self.state = CommitState.COMMITTED
        self.committed_version = version

    def _landed(self, path: str, data: bytes) -> bool | None:
        """Whether ``path`` holds our commit: True, False (absent, or another's), None (unreadable)."""
        try:
            return self.storage.read(path) == data
        except FileNotFoundError:
            return False
        except Exception:
            return None

    def _previous_metadata(self, metadata: Metadata) -> Metadata | None:
        """The metadata ``metadata`` evolves from: none for a new table, nor for a replaced
        one (a new table id means the table is created anew, as REPLACE TABLE does)."""
        previous = self.read_snapshot.metadata if self.read_snapshot is not None else None
        return previous if previous is not None and previous.id == metadata.id else None

    def _with_prepared_metadata(self, actions: Sequence[Action]) -> Sequence[Action]:
        """``actions`` with the metadata prepared (``metadata_change.prepare``) and the protocol it needs."""
        metadata = next((a for a in actions if isinstance(a, Metadata)), None)
        given = next((a for a in actions if isinstance(a, Protocol)), None)
        current = given or (self.read_snapshot.protocol if self.read_snapshot is not None else None)
        if metadata is None or current is None:
            return actions
        prepared, needed = prepare(metadata, self._previous_metadata(metadata), current)
        if needed is current:
            return [prepared if a is metadata else a for a in actions]
        return [needed, *(prepared if a is metadata else a for a in actions if a is not given)]

    def _ensure_log_continues(self, version: int) -> None:
        """Refuse to write ``version`` where the log no longer leads up to it.

        Log cleanup may have removed the versions this transaction read; writing there
        would create a commit no reader replays.
        """
        if version == 0:
            if list_log(self.storage, f"{self.table_root}/_delta_log"):
                raise ProtocolChangedException(f"{self.table_root}: the table was created concurrently; retry the operation")
            return
        if not self.storage.exists(f"{self.table_root}/_delta_log/{commit_name(version - 1)}"):
            raise ConcurrentWriteException(
                f"{self.table_root}: version {version - 1}, which this transaction builds on, is no longer in the "
                "log (it was cleaned up after newer checkpoints); retry the operation on a fresh snapshot"
            )

    def _check_domains(self, actions: Sequence[Action], protocol: Protocol) -> None:
        domains = [a for a in actions if isinstance(a, DomainMetadata)]
        if not domains:
            return
        if "domainMetadata" not in writer_features(protocol):
            raise InvalidTableOperationError(
                f"{self.table_root}: domain metadata needs the domainMetadata table feature in writerFeatures"
            )
        system = sorted(d.domain for d in domains if d.domain.startswith("delta.") and d.domain not in MANAGED_DOMAINS)
        if system:
            raise InvalidTableOperationError(
                f"{self.table_root}: cannot write system-controlled domain {system[0]} (domains named delta.* "
                "belong to Delta features this library does not manage)"
            )

    def _check_append_only(self, actions: Sequence[Action], metadata: Metadata) -> None:
        if metadata.configuration.get("delta.appendOnly", "false").lower() != "true":
            return
        if any(isinstance(a, RemoveFile) and a.data_change for a in actions):
            raise InvalidTableOperationError(
                f"{self.table_root}: this table is append-only (delta.appendOnly=true): it refuses deletes "
                "and updates. Unset the property with ALTER TABLE ... UNSET TBLPROPERTIES to allow them.",
                error_class="DELTA_CANNOT_MODIFY_APPEND_ONLY",
            )

    def _resolve_conflicts(self, lost_version: int, writes: WriteSet, metadata: Metadata, isolation: IsolationLevel) -> int:
        """Check every winner from ``lost_version`` on; return the next version to try."""
        version = lost_version
        while True:
            try:
                winner = Snapshot.read_commit(self.storage, self.table_root, version)
            except FileNotFoundError:
                return version
            if self.dropping_feature is not None:
                raise ConcurrentWriteException(
                    f"{self.table_root}: version {version} was committed while dropping {self.dropping_feature}; "
                    "DROP FEATURE conflicts with every concurrent write. Run it again."
                )
            if self.read_version < 0:
                raise ProtocolChangedException(
                    f"{self.table_root}: the table was created concurrently (version {version} exists). "
                    "This happens when several writers create a table in the same empty directory."
                )
            check_winning_commit(
                winner,
                self.reads,
                writes,
                isolation,
                metadata.schema,
                metadata.partition_columns,
                self.table_root,
            )
            winner_mark = row_tracking.winner_mark(winner.domains)
            if winner_mark is not None:
                self._row_id_mark = max(self._row_id_mark, winner_mark)
            version += 1

    def _previous_commit_timestamp(self, version: int) -> int:
        if version == 0:
            return 0
        data = self.storage.read(f"{self.table_root}/_delta_log/{commit_name(version - 1)}")
        batch = parse_json_actions(data, version - 1)
        info = batch.commit_info or {}
        return int(info.get("inCommitTimestamp", info.get("timestamp", 0)))

    def _write_checksum(
        self, version: int, actions: Sequence[Action], info: dict[str, Any], protocol: Protocol, metadata: Metadata
    ) -> None:
        """Write the committed version's checksum (``checksum.py``), from the previous one and the
        actions, else from the state when this transaction read it anyway; never fail the commit."""
        try:
            ict = info.get("inCommitTimestamp")
            snapshot = self.read_snapshot
            live = snapshot.loaded_paths() if snapshot is not None else frozenset()
            if version == 0 or snapshot is None:
                previous: VersionChecksum | None = checksum.empty(metadata, protocol)
            else:
                previous = checksum.read_checksum(self.storage, self.table_root, version - 1)
            result = checksum.after_commit(previous, actions, live, ict, self.txn_id) if previous is not None else None
            if result is None and live is not None:  # the state was replayed already: once more costs little
                result = checksum.of_snapshot(Snapshot.load(self.storage, self.table_root, version), ict, self.txn_id)
            if result is not None:
                checksum.write_checksum(self.storage, self.table_root, version, result)
        except Exception as exc:  # an aid to readers; the commit stands
            log.warning("%s: the checksum of version %d was not written: %s", self.table_root, version, exc)
        except BaseException as interrupt:
            interrupt.add_note(f"{self.table_root}: version {version} was committed; the interruption stopped its checksum")
            raise

    def _post_commit(self, version: int, metadata: Metadata) -> bool:
        """Checkpoint and clean up when due; the checkpoint's state gives the version its checksum
        where none was written. Failures here never undo the commit: an error is logged, an
        interrupt is raised with a note that the version stands."""
        if version == 0 or version % checkpoint_interval(metadata.configuration) != 0:
            return False
        try:
            snapshot = Snapshot.load(self.storage, self.table_root, version)
            write_checkpoint(self.storage, snapshot)
            if checksum.read_checksum(self.storage, self.table_root, version) is None:  # a chain of them starts again
                checksum.write_checksum(self.storage, self.table_root, version, checksum.of_snapshot(snapshot))
            cleanup_expired_logs(self.storage, snapshot)
            return True
        except Exception as exc:  # a checkpoint is an optimization; the commit stands
            log.warning("%s: checkpoint at version %d failed: %s", self.table_root, version, exc)
            return False
        except BaseException as interrupt:
            interrupt.add_note(f"{self.table_root}: version {version} was committed; the interruption stopped its checkpoint")
            raise

    def _update_manifests(self, version: int, actions: Sequence[Action], metadata: Metadata) -> None:
        """delta-spark's manifest hook: with ``delta.compatibility.symlinkFormatManifest.enabled``,
        a commit that adds or removes files updates the symlink manifests of the partitions it
        touched. Unlike a checkpoint this is no optimization (external readers would read a
        stale table), so a failure is raised, as delta-spark raises it, saying the version stands:
        a refusal (column mapping, deletion vectors) as itself, anything else as
        ``PostCommitHookError`` (``DELTA_POST_COMMIT_HOOK_FAILED``)."""
        if not manifest.enabled(metadata) or not manifest.has_file_actions(actions):
            return
        committed = f"{self.table_root}: version {version} was committed; its symlink manifests were not updated"
        try:
            manifest.update_after_commit(self.storage, self.table_root, self.read_snapshot, version, actions)
        except InvalidTableOperationError as refusal:
            refusal.add_note(committed)
            raise
        except Exception as exc:
            raise PostCommitHookError(
                f"Committing to the Delta table version {version} succeeded but error while executing post-commit hook "
                f"{manifest.HOOK_NAME}: {exc} ({self.table_root})",
                version,
            ) from exc
        except BaseException as interrupt:
            interrupt.add_note(committed)
            raise


# System domains whose rules this library implements (``clustering.py``).
MANAGED_DOMAINS = frozenset({"delta.clustering"})


def _ict_enabled(metadata: Metadata) -> bool:
    return metadata.configuration.get("delta.enableInCommitTimestamps", "false").lower() == "true"


def _param(value: Any) -> Any:
    """operationParameters values are JSON-encoded strings in delta-spark's commitInfo, but
    for a missing value (a CTAS's ``description``), which it writes as JSON null."""
    return value if value is None or isinstance(value, str) else json.dumps(value)


def _commit_info_line(info: dict[str, Any]) -> str:
    return json.dumps({"commitInfo": info}, separators=(",", ":"))


def _isolation_for(actions: Sequence[Action], level: IsolationLevel) -> IsolationLevel:
    """The level a commit runs and is recorded at, as delta-spark picks it: SnapshotIsolation
    when it holds only file actions that change no data (OPTIMIZE's rewrite), else ``level``.
    Any other action (metadata, protocol, a domain, an app id) keeps ``level``."""
    only_files = all(isinstance(a, (AddFile, RemoveFile, AddCDCFile)) for a in actions)
    changes_data = any(isinstance(a, (AddFile, RemoveFile)) and a.data_change for a in actions)
    return IsolationLevel.SNAPSHOT_ISOLATION if only_files and not changes_data else level

"""DROP FEATURE: take a table feature out of the protocol, as delta-spark 4 does.

A writer-only feature goes in one commit once nothing uses it. A reader-writer feature
also leaves traces in history that a reader without it cannot replay, so it is dropped
behind barrier checkpoints: three empty commits, each checkpointed, then one commit that
removes the feature, adds the ``checkpointProtection`` writer feature and sets
``delta.requireCheckpointProtectionBeforeVersion`` to its own version, and a checkpoint
of it. Readers start from those checkpoints; the protection keeps them until history
before them is truncated in one go (``checkpointProtection``'s RFC in delta-io/delta).

``TRUNCATE HISTORY`` is the older path, and the only way to drop ``checkpointProtection``:
history older than ``delta.dropFeatureTruncateHistory.retentionDuration`` (24 hours) is
deleted, and the drop fails, asking to wait, while retained history still uses the feature.

Removing a feature's traces from data (purging deletion vectors) is the engine's work; it
comes in as ``purge_traces``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from .actions import Metadata, Protocol
from .checkpoint import cleanup_expired_logs, parse_interval_ms, write_checkpoint
from .errors import InvalidTableOperationError, UnsupportedFeatureError
from .features import FEATURES
from .log_files import LogFileKind
from .log_segment import list_log
from .parsing import ActionBatch, parse_json_actions
from .protocol import lowest_protocol, require_writable, supported_features
from .snapshot import Snapshot
from .table import Table

log = logging.getLogger(__name__)

CHECKPOINT_PROTECTION = "checkpointProtection"
PROTECTED_VERSION_PROP = "delta.requireCheckpointProtectionBeforeVersion"
TRUNCATE_RETENTION_PROP = "delta.dropFeatureTruncateHistory.retentionDuration"
DEFAULT_TRUNCATE_RETENTION = "interval 24 hours"
BARRIER_CHECKPOINTS = 3
EMPTY_COMMIT = "Empty Commit"


@dataclass(frozen=True)
class RemovableFeature:
    """How to take one feature out: the properties that turn it on (disabled first, removed
    at the downgrade), what in the latest snapshot still uses it, what in a commit does."""

    name: str
    enabling_properties: tuple[str, ...] = ()
    dropped_properties: tuple[str, ...] = ()
    traces: Callable[[Snapshot], str | None] = lambda snapshot: None
    commit_uses: Callable[[ActionBatch], bool] = lambda batch: False

    @property
    def reader_writer(self) -> bool:
        return FEATURES[self.name].reader_writer


def _files_with_dvs(snapshot: Snapshot) -> str | None:
    count = snapshot.files.num_rows - snapshot.files.column("deletionVector").null_count
    return f"{count} data file(s) still have deletion vectors" if count else None


def _commit_has_dvs(batch: ActionBatch) -> bool:
    return any(
        len(actions)
        and actions.type.get_field_index("deletionVector") >= 0
        and actions.field("deletionVector").null_count < len(actions)
        for actions in (batch.adds, batch.removes)
    )


def _constraints(snapshot: Snapshot) -> str | None:
    names = sorted(k[len("delta.constraints.") :] for k in snapshot.configuration if k.lower().startswith("delta.constraints."))
    return (
        f"the CHECK constraint(s) {', '.join(names)} must be dropped first (ALTER TABLE ... DROP CONSTRAINT)" if names else None
    )


REMOVABLE: dict[str, RemovableFeature] = {
    f.name: f
    for f in (
        RemovableFeature(
            "deletionVectors",
            enabling_properties=("delta.enableDeletionVectors",),
            traces=_files_with_dvs,
            commit_uses=_commit_has_dvs,
        ),
        RemovableFeature("checkConstraints", traces=_constraints),
        RemovableFeature("vacuumProtocolCheck"),
        RemovableFeature(
            "inCommitTimestamp",
            enabling_properties=("delta.enableInCommitTimestamps",),
            dropped_properties=("delta.inCommitTimestampEnablementVersion", "delta.inCommitTimestampEnablementTimestamp"),
        ),
        RemovableFeature(CHECKPOINT_PROTECTION, dropped_properties=(PROTECTED_VERSION_PROP,)),
    )
}
# Features delta-spark can drop that need rewrites this library does not do yet.
_NOT_YET = frozenset({"columnMapping", "v2Checkpoint", "typeWidening", "typeWidening-preview", "rowTracking"})


@dataclass(frozen=True)
class DropOutcome:
    version: int
    protocol: Protocol
    purged: bool


def _resolve(snapshot: Snapshot, name: str, truncate_history: bool, where: str) -> RemovableFeature:
    known = {f.lower(): f for f in FEATURES}
    canonical = known.get(name.lower())
    if canonical is None:
        raise UnsupportedFeatureError(f"{where}: cannot drop {name!r}: it is not a table feature", frozenset({name}))
    if canonical not in supported_features(snapshot.protocol):
        raise InvalidTableOperationError(f"{where}: cannot drop {canonical}: the table's protocol does not support it")
    if canonical in _NOT_YET:
        raise UnsupportedFeatureError(
            f"{where}: dropping {canonical} needs a rewrite this library does not implement yet", frozenset({canonical})
        )
    feature = REMOVABLE.get(canonical)
    if feature is None:
        raise InvalidTableOperationError(f"{where}: the table feature {canonical} cannot be dropped (it is not removable)")
    dependents = sorted(f for f in supported_features(snapshot.protocol) if f in FEATURES and canonical in FEATURES[f].requires)
    if dependents:
        raise InvalidTableOperationError(
            f"{where}: cannot drop {canonical}: {', '.join(dependents)} depend on it; drop them first"
        )
    if truncate_history and not (feature.reader_writer or canonical == CHECKPOINT_PROTECTION):
        raise InvalidTableOperationError(
            f"{where}: TRUNCATE HISTORY applies only to reader-writer features; {canonical} is a writer feature"
        )
    if canonical == CHECKPOINT_PROTECTION and not truncate_history:
        raise InvalidTableOperationError(f"{where}: {CHECKPOINT_PROTECTION} can only be dropped with TRUNCATE HISTORY")
    return feature


def _disable(table: Table, feature: RemovableFeature) -> bool:
    """Commit the feature's enabling properties as false, so no writer uses it meanwhile."""
    snapshot = table.snapshot()
    enabled = {k: "false" for k, v in snapshot.configuration.items() if k in feature.enabling_properties and v.lower() == "true"}
    if not enabled:
        return False
    metadata = replace(snapshot.metadata, configuration={**snapshot.configuration, **enabled})
    table.transaction(read_snapshot=snapshot).commit([metadata], "SET TBLPROPERTIES", {"properties": enabled})
    return True


def _empty_commit_and_checkpoint(table: Table) -> None:
    table.transaction().commit([], EMPTY_COMMIT)
    write_checkpoint(table.storage, table.snapshot())


def _downgraded(snapshot: Snapshot, feature: RemovableFeature, protect: bool) -> tuple[Protocol, Metadata]:
    features = supported_features(snapshot.protocol) - {feature.name}
    configuration = {
        k: v for k, v in snapshot.configuration.items() if k not in feature.enabling_properties + feature.dropped_properties
    }
    if protect:
        features |= {CHECKPOINT_PROTECTION}
        configuration[PROTECTED_VERSION_PROP] = str(snapshot.version + 1)
    return lowest_protocol(frozenset(features)), replace(snapshot.metadata, configuration=configuration)


def _history_uses(table: Table, feature: RemovableFeature, snapshot: Snapshot) -> str | None:
    """What in the log still left uses ``feature``: a commit that does, or, for
    checkpointProtection, history before the protected version."""
    files = list_log(table.storage, table.log_dir)
    commits = sorted(
        (f for f in files if f.kind is LogFileKind.COMMIT and f.version <= snapshot.version), key=lambda f: f.version
    )
    if feature.name == CHECKPOINT_PROTECTION:
        protected = int(snapshot.configuration.get(PROTECTED_VERSION_PROP, "0"))
        earliest = min((f.version for f in files if f.kind is LogFileKind.COMMIT or f.is_checkpoint), default=0)
        return (
            f"the log still holds versions from {earliest}, before protected version {protected}"
            if earliest < protected
            else None
        )
    for f in commits:
        if feature.commit_uses(parse_json_actions(table.storage.read(f.path), f.version)):
            return f"version {f.version} uses it"
    return None


def drop_feature(
    table: Table,
    name: str,
    truncate_history: bool = False,
    purge_traces: Callable[[Table, str], bool] | None = None,
    now_ms: int | None = None,
) -> DropOutcome:
    """``ALTER TABLE ... DROP FEATURE name [TRUNCATE HISTORY]``.

    ``purge_traces(table, feature)`` removes the feature's traces from data files and says
    whether it committed anything. Errors name the table, the feature and the cause.
    """
    snapshot = table.snapshot()
    require_writable(snapshot.protocol, snapshot.metadata, table.root)
    feature = _resolve(snapshot, name, truncate_history, f"{table.root} (version {snapshot.version})")
    changed = _disable(table, feature)
    if purge_traces is not None:
        changed = purge_traces(table, feature.name) or changed
    snapshot = table.snapshot()
    traces = feature.traces(snapshot)
    if traces:
        raise InvalidTableOperationError(f"{table.root} (version {snapshot.version}): cannot drop {feature.name}: {traces}")
    if truncate_history:
        snapshot = _truncate_history(table, feature, snapshot, changed, now_ms)
    elif feature.reader_writer:
        for _ in range(BARRIER_CHECKPOINTS):
            _empty_commit_and_checkpoint(table)
        snapshot = table.snapshot()
    traces = feature.traces(snapshot)  # a writer may have used the feature since
    if traces:
        raise InvalidTableOperationError(f"{table.root} (version {snapshot.version}): cannot drop {feature.name}: {traces}")
    protect = feature.reader_writer and not truncate_history
    protocol, metadata = _downgraded(snapshot, feature, protect)
    transaction = table.transaction(read_snapshot=snapshot)
    transaction.mark_read_whole_table()
    transaction.dropping_feature = feature.name
    result = transaction.commit(
        [protocol, metadata], "DROP FEATURE", {"featureName": feature.name, "truncateHistory": truncate_history}
    )
    if protect:
        write_checkpoint(table.storage, table.snapshot(result.version))
    log.info("%s: dropped table feature %s at version %d", table.root, feature.name, result.version)
    return DropOutcome(result.version, protocol, changed)


def _truncate_history(table: Table, feature: RemovableFeature, snapshot: Snapshot, changed: bool, now_ms: int | None) -> Snapshot:
    """Delete history older than the truncation retention; refuse while what is left uses the feature."""
    where = f"{table.root} (version {snapshot.version})"
    retention = parse_interval_ms(snapshot.configuration.get(TRUNCATE_RETENTION_PROP, DEFAULT_TRUNCATE_RETENTION))
    if changed and feature.reader_writer:
        _empty_commit_and_checkpoint(table)
        raise InvalidTableOperationError(
            f"{where}: dropping {feature.name} was partly done: the current version no longer uses it, but older "
            f"versions do. Run the command again with TRUNCATE HISTORY once {TRUNCATE_RETENTION_PROP} "
            f"({retention // 3_600_000} hours) has passed."
        )
    if feature.name != CHECKPOINT_PROTECTION:
        _empty_commit_and_checkpoint(table)
        snapshot = table.snapshot()
    cleanup_expired_logs(table.storage, snapshot, now_ms=now_ms, retention_ms=retention)
    in_history = _history_uses(table, feature, snapshot)
    if in_history:
        raise InvalidTableOperationError(
            f"{where}: cannot drop {feature.name} yet: {in_history}. Wait until that history is older than "
            f"{TRUNCATE_RETENTION_PROP} and run DROP FEATURE ... TRUNCATE HISTORY again."
        )
    return snapshot

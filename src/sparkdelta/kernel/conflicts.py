"""Optimistic-concurrency conflict checks, as delta-spark's ConflictChecker applies them.

When a commit loses the race for version ``v``, each winning commit between the
transaction's read version and now is checked against what the transaction read and
wrote. No logical conflict means the transaction is rebased onto the winner and retried;
a logical conflict raises the exception delta-spark users already catch.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import cast

import pyarrow as pa
import pyarrow.compute as pc

from .errors import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    MetadataChangedException,
    ProtocolChangedException,
)
from .file_paths import canonical_paths
from .identity import SCHEMA_UPDATE_TAG
from .parsing import ActionBatch
from .partitions import typed_partition_values
from .schema import StructType


class IsolationLevel(enum.StrEnum):
    """delta-spark's levels: Serializable, its default (and the only one it lets a table set);
    WriteSerializable, Databricks', where concurrent blind appends never conflict; and
    SnapshotIsolation, what a commit that changes no data (OPTIMIZE) runs at: files a winner
    added cannot conflict with it."""

    SERIALIZABLE = "Serializable"
    WRITE_SERIALIZABLE = "WriteSerializable"
    SNAPSHOT_ISOLATION = "SnapshotIsolation"


@dataclass
class ReadSet:
    """What a transaction's outcome depends on."""

    whole_table: bool = False
    predicates: list[pc.Expression] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    app_ids: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class WriteSet:
    """What a transaction changes."""

    removed_paths: frozenset[str]
    app_ids: frozenset[str]
    domains: frozenset[str]
    changes_metadata: bool
    changes_protocol: bool


def check_winning_commit(
    winner: ActionBatch,
    reads: ReadSet,
    writes: WriteSet,
    isolation: IsolationLevel,
    schema: StructType,
    partition_columns: tuple[str, ...],
    table: str,
) -> None:
    """Raise the conflict exception ``winner`` causes, or return if we may rebase onto it."""
    where = f"{table}: a concurrent transaction committed version {winner.version}"
    operation = (winner.commit_info or {}).get("operation", "unknown operation")
    where = f"{where} ({operation})"
    if winner.protocol is not None:
        raise ProtocolChangedException(f"{where} and changed the protocol. Retry the operation.")
    if winner.metadata is not None and (writes.changes_metadata or not _moves_identity_marks_only(winner)):
        raise MetadataChangedException(f"{where} and changed the table metadata. Retry the operation.")

    winner_is_blind_append = bool((winner.commit_info or {}).get("isBlindAppend", False))
    adds = winner.adds
    # Even blind appends matter when this transaction rewrites the metadata (e.g. repartitions).
    checks_adds = isolation is IsolationLevel.SERIALIZABLE or not winner_is_blind_append or writes.changes_metadata
    if len(adds) and isolation is not IsolationLevel.SNAPSHOT_ISOLATION and checks_adds:
        changed = adds.filter(cast(pa.BooleanArray, adds.field("dataChange").fill_null(True)))
        if len(changed) and _any_read(changed, reads, schema, partition_columns):
            sample = changed.field("path")[0].as_py()
            raise ConcurrentAppendException(
                f"{where} and added files this transaction should have read (e.g. {sample}). Retry the operation."
            )

    removed = set(canonical_paths(winner.removes.field("path"), table).to_pylist()) if len(winner.removes) else set()
    if removed:
        if reads.whole_table or removed & reads.files:
            sample = next(iter(removed & reads.files), next(iter(removed)))
            raise ConcurrentDeleteReadException(
                f"{where} and removed a file this transaction read ({sample}). Retry the operation."
            )
        both = removed & writes.removed_paths
        if both:
            raise ConcurrentDeleteDeleteException(
                f"{where} and removed a file this transaction also removes ({next(iter(both))}). Retry the operation."
            )

    winner_apps = {t["appId"] for t in winner.txns}
    clash = winner_apps & (reads.app_ids | writes.app_ids)
    if clash:
        raise ConcurrentTransactionException(
            f"{where} for application id {sorted(clash)[0]}; this transaction depends on it. "
            "Retry with the next transaction version."
        )
    winner_domains = {d["domain"] for d in winner.domains}
    if winner_domains & writes.domains:
        raise ConcurrentTransactionException(
            f"{where} and changed domain metadata {sorted(winner_domains & writes.domains)[0]} "
            "that this transaction also changes."
        )


def _moves_identity_marks_only(winner: ActionBatch) -> bool:
    """Whether the winner's metadata change only moved identity high-water marks (its commitInfo
    says so, as delta-spark's does): a transaction that changes no metadata itself is not
    affected, since it generated no identity values (a write that does moves the marks)."""
    tags = (winner.commit_info or {}).get("tags") or {}
    return str(tags.get(SCHEMA_UPDATE_TAG, "false")).lower() == "true"


def _any_read(adds: pa.StructArray, reads: ReadSet, schema: StructType, partition_columns: tuple[str, ...]) -> bool:
    """Whether any added file falls inside what the transaction read."""
    if reads.whole_table:
        return True
    if not reads.predicates:
        return False
    values = typed_partition_values(adds.field("partitionValues"), schema, partition_columns)
    if values.num_columns == 0:
        # A column-free table has no rows; keep one row per file for column-free predicates.
        values = pa.table({"__file__": pa.nulls(len(adds))})
    for predicate in reads.predicates:
        try:
            if values.filter(predicate).num_rows:
                return True
        except (pa.ArrowException, KeyError):
            # A predicate we cannot evaluate on partition values may match anything.
            return True
    return False

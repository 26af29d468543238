"""Version checksum files (``_delta_log/N.crc``; PROTOCOL.md, "Version Checksum File").

A checksum states the table at one version: its size and file count, deletion-vector
counts, protocol, metadata, live transactions and domains, and histograms of file sizes
and of deleted rows per file, in the layout delta-spark writes. Writers add one after each
commit, computed from the previous version's checksum and the commit's actions, so no log
replay is needed; readers answer sizes from it and check a replayed state against it.

A checksum is an aid, never a condition: a commit stands whether or not its checksum could
be written, one is never overwritten, and a missing or unreadable one is as if absent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .actions import Action, AddFile, DomainMetadata, Metadata, Protocol, RemoveFile, SetTransaction
from .log_files import LOG_DIR
from .storage import Storage

if TYPE_CHECKING:
    from .snapshot import Snapshot

log = logging.getLogger(__name__)


def _file_size_bins() -> list[int]:
    """delta-spark's file size histogram bins: finer where files usually are, up to 256 GiB."""
    kib, mib, gib = 1 << 10, 1 << 20, 1 << 30
    bins = [0] + [8 * kib << i for i in range(10)]  # 8 KiB .. 4 MiB, doubling
    for start, stop, step in (
        (8 * mib, 40 * mib, 4 * mib),
        (48 * mib, 120 * mib, 8 * mib),
        (124 * mib, 144 * mib, 4 * mib),
        (160 * mib, 576 * mib, 16 * mib),
        (640 * mib, 1408 * mib, 64 * mib),
        (1536 * mib, 1920 * mib, 128 * mib),
        (2 * gib, 4 * gib, 256 * mib),
    ):
        bins += range(start, stop + 1, step)
    return bins + [8 * gib << i for i in range(6)]  # 8 GiB .. 256 GiB


FILE_SIZE_BINS = np.array(_file_size_bins(), np.int64)
# Files by deleted rows: none, then 1-9, 10-99, ... by powers of ten, the last two split at Int.MaxValue.
DELETED_RECORD_BINS = np.array([0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 2_147_483_647], np.int64)


def checksum_name(version: int) -> str:
    return f"{version:020d}.crc"


def _bins(boundaries: np.ndarray, values: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Per bin (a boundary up to the next), how many ``values`` fall in it, or the sum of their ``weights``."""
    positions = np.searchsorted(boundaries, values, side="right") - 1
    return np.bincount(positions, weights=weights, minlength=len(boundaries)).astype(np.int64)


@dataclass(frozen=True)
class VersionChecksum:
    """One version's checksum; the ``*_counts`` arrays follow ``FILE_SIZE_BINS`` and ``DELETED_RECORD_BINS``."""

    table_size_bytes: int
    num_files: int
    num_deleted_records: int
    num_deletion_vectors: int
    metadata: Metadata
    protocol: Protocol
    set_transactions: tuple[SetTransaction, ...] = ()
    domain_metadata: tuple[DomainMetadata, ...] = ()
    file_counts: tuple[int, ...] = field(default=(0,) * len(FILE_SIZE_BINS))
    file_bytes: tuple[int, ...] = field(default=(0,) * len(FILE_SIZE_BINS))
    deleted_record_counts: tuple[int, ...] = field(default=(0,) * len(DELETED_RECORD_BINS))
    in_commit_timestamp: int | None = None
    txn_id: str | None = None

    def to_json(self) -> bytes:
        """The file's bytes, its fields in delta-spark's order."""
        body: dict[str, Any] = {
            "txnId": self.txn_id,
            "tableSizeBytes": self.table_size_bytes,
            "numFiles": self.num_files,
            "numDeletedRecordsOpt": self.num_deleted_records,
            "numDeletionVectorsOpt": self.num_deletion_vectors,
            "numMetadata": 1,
            "numProtocol": 1,
            "inCommitTimestampOpt": self.in_commit_timestamp,
            "setTransactions": [t.to_dict() for t in self.set_transactions],
            "domainMetadata": [d.to_dict() for d in self.domain_metadata],
            "metadata": self.metadata.to_dict(),
            "protocol": self.protocol.to_dict(),
            "fileSizeHistogram": {
                "sortedBinBoundaries": FILE_SIZE_BINS.tolist(),
                "fileCounts": list(self.file_counts),
                "totalBytes": list(self.file_bytes),
            },
            "deletedRecordCountsHistogramOpt": {"deletedRecordCounts": list(self.deleted_record_counts)},
        }
        return json.dumps({k: v for k, v in body.items() if v is not None}, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes) -> VersionChecksum:
        """A checksum as any writer wrote it; histograms in other bins than ours are left out (as unknown)."""
        raw = json.loads(data)
        sizes = raw.get("fileSizeHistogram") or {}
        deleted = (raw.get("deletedRecordCountsHistogramOpt") or {}).get("deletedRecordCounts")
        same_bins = sizes.get("sortedBinBoundaries") == FILE_SIZE_BINS.tolist()
        return cls(
            table_size_bytes=int(raw["tableSizeBytes"]),
            num_files=int(raw["numFiles"]),
            num_deleted_records=int(raw.get("numDeletedRecordsOpt") or 0),
            num_deletion_vectors=int(raw.get("numDeletionVectorsOpt") or 0),
            metadata=Metadata.from_dict(raw["metadata"]),
            protocol=Protocol.from_dict(raw["protocol"]),
            set_transactions=tuple(
                SetTransaction(t["appId"], int(t["version"]), t.get("lastUpdated")) for t in raw.get("setTransactions") or []
            ),
            domain_metadata=tuple(
                DomainMetadata(d["domain"], d["configuration"], bool(d.get("removed"))) for d in raw.get("domainMetadata") or []
            ),
            file_counts=tuple(sizes["fileCounts"]) if same_bins else (),
            file_bytes=tuple(sizes["totalBytes"]) if same_bins else (),
            deleted_record_counts=tuple(deleted) if deleted and len(deleted) == len(DELETED_RECORD_BINS) else (),
            in_commit_timestamp=raw.get("inCommitTimestampOpt"),
            txn_id=raw.get("txnId"),
        )


def of_snapshot(snapshot: Snapshot, in_commit_timestamp: int | None = None, txn_id: str | None = None) -> VersionChecksum:
    """The checksum of ``snapshot``, from its reconciled files."""
    files = snapshot.active_files(["size", "deletionVector"])
    sizes = files.column("size").to_numpy(zero_copy_only=False).astype(np.int64)
    dvs = cast(pa.StructArray, files.column("deletionVector").combine_chunks())
    cardinalities = cast(pa.Int64Array, pc.fill_null(dvs.field("cardinality"), pa.scalar(0, pa.int64())))
    deleted = cardinalities.to_numpy(zero_copy_only=False).astype(np.int64)
    return VersionChecksum(
        table_size_bytes=int(sizes.sum()),
        num_files=len(sizes),
        num_deleted_records=int(deleted.sum()),
        num_deletion_vectors=int(dvs.is_valid().true_count if len(dvs) else 0),
        metadata=snapshot.metadata,
        protocol=snapshot.protocol,
        set_transactions=tuple(snapshot.app_transactions.values()),
        domain_metadata=tuple(d for d in snapshot.domain_metadata.values() if not d.removed),
        file_counts=tuple(_bins(FILE_SIZE_BINS, sizes).tolist()),
        file_bytes=tuple(_bins(FILE_SIZE_BINS, sizes, sizes.astype(np.float64)).tolist()),
        deleted_record_counts=tuple(_bins(DELETED_RECORD_BINS, deleted).tolist()),
        in_commit_timestamp=in_commit_timestamp,
        txn_id=txn_id,
    )


def _cardinality(vector: dict[str, Any] | None) -> int:
    return int((vector or {}).get("cardinality") or 0)


def after_commit(
    previous: VersionChecksum,
    actions: Sequence[Action],
    live_before: frozenset[str] | None,
    in_commit_timestamp: int | None = None,
    txn_id: str | None = None,
) -> VersionChecksum | None:
    """``previous`` (the version before the commit) with the commit's ``actions`` applied; None
    when the actions alone cannot say (a remove without its size, an add of a file that may
    already be live: ``live_before`` holds the live paths when known).

    Every remove is of a live file; an add is new unless the commit removes its path too.
    """
    removes = [a for a in actions if isinstance(a, RemoveFile)]
    if any(r.size is None for r in removes) or not previous.file_counts or not previous.deleted_record_counts:
        return None
    removed_paths = {r.path for r in removes}
    adds = [a for a in actions if isinstance(a, AddFile)]
    # A live file added again without its remove (a backfill of row ids, new stats) would count
    # twice; without the live paths, only an add that changes no data can be one.
    if any(
        a.path not in removed_paths and (a.path in live_before if live_before is not None else not a.data_change) for a in adds
    ):
        return None
    signed = [(a.size, _cardinality(a.deletion_vector), a.deletion_vector is not None, 1) for a in adds]
    signed += [(cast(int, r.size), _cardinality(r.deletion_vector), r.deletion_vector is not None, -1) for r in removes]
    sizes = np.array([s for s, _, _, _ in signed], np.int64)
    deleted = np.array([d for _, d, _, _ in signed], np.int64)
    signs = np.array([n for _, _, _, n in signed], np.int64)
    counts = np.array(previous.file_counts, np.int64) + _bins(FILE_SIZE_BINS, sizes, signs.astype(np.float64))
    totals = np.array(previous.file_bytes, np.int64) + _bins(FILE_SIZE_BINS, sizes, (sizes * signs).astype(np.float64))
    deletions = np.array(previous.deleted_record_counts, np.int64) + _bins(DELETED_RECORD_BINS, deleted, signs.astype(np.float64))
    metadata = next((a for a in actions if isinstance(a, Metadata)), previous.metadata)
    protocol = next((a for a in actions if isinstance(a, Protocol)), previous.protocol)
    transactions = {t.app_id: t for t in previous.set_transactions}
    transactions.update({t.app_id: t for t in actions if isinstance(t, SetTransaction)})
    domains = {d.domain: d for d in previous.domain_metadata}
    for domain in (a for a in actions if isinstance(a, DomainMetadata)):
        if domain.removed:
            domains.pop(domain.domain, None)
        else:
            domains[domain.domain] = domain
    return replace(
        previous,
        table_size_bytes=previous.table_size_bytes + int((sizes * signs).sum()),
        num_files=previous.num_files + int(signs.sum()),
        num_deleted_records=previous.num_deleted_records + int((deleted * signs).sum()),
        num_deletion_vectors=previous.num_deletion_vectors + sum(n for _, _, has, n in signed if has),
        metadata=metadata,
        protocol=protocol,
        set_transactions=tuple(transactions.values()),
        domain_metadata=tuple(domains.values()),
        file_counts=tuple(counts.tolist()),
        file_bytes=tuple(totals.tolist()),
        deleted_record_counts=tuple(deletions.tolist()),
        in_commit_timestamp=in_commit_timestamp,
        txn_id=txn_id,
    )


def read_checksum(storage: Storage, table_root: str, version: int) -> VersionChecksum | None:
    """The checksum of ``version``, or None where there is none or it cannot be read."""
    path = f"{table_root}/{LOG_DIR}/{checksum_name(version)}"
    try:
        return VersionChecksum.from_json(storage.read(path))
    except FileNotFoundError:
        return None
    except Exception as exc:  # an aid only: a damaged checksum is ignored, and said so
        log.warning("%s: version %d's checksum %s cannot be read (%s); ignored", table_root, version, path, exc)
        return None


def write_checksum(storage: Storage, table_root: str, version: int, checksum: VersionChecksum) -> None:
    """Write ``version``'s checksum unless one is there already (the spec forbids overwriting)."""
    try:
        storage.put_if_absent(f"{table_root}/{LOG_DIR}/{checksum_name(version)}", checksum.to_json())
    except FileExistsError:
        pass


def empty(metadata: Metadata, protocol: Protocol) -> VersionChecksum:
    """The checksum of a table with no files yet, before its first commit's actions."""
    return VersionChecksum(0, 0, 0, 0, metadata, protocol)


def mismatches(snapshot: Snapshot, checksum: VersionChecksum) -> list[str]:
    """What the replayed ``snapshot`` says otherwise than ``checksum`` of its version (the spec's required fields)."""
    replayed = of_snapshot(snapshot)
    found = []
    for name in ("table_size_bytes", "num_files"):
        if getattr(replayed, name) != getattr(checksum, name):
            found.append(f"{name} {getattr(replayed, name)} (checksum: {getattr(checksum, name)})")
    if replayed.metadata.to_dict() != checksum.metadata.to_dict():
        found.append("metadata")
    if replayed.protocol.to_dict() != checksum.protocol.to_dict():
        found.append("protocol")
    return found

"""CLONE: a new table holding a version of another, as delta-spark's shallow and deep clones.

A shallow clone writes only a log: its adds name the source's files by absolute URI (and
relative deletion vectors become absolute ones), so it costs nothing but must not
outlive the source's VACUUM of those files. A deep clone copies the data and deletion-
vector files (in parallel) under the same relative paths, so it is independent. Either
way the clone gets the source's schema, partitioning, properties (plus any given) and
protocol, a new table id, and one commit with operation CLONE and delta-spark's metrics.
Cloning onto an existing table replaces its files only when asked (``replace``).
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc

from .actions import Action, AddFile
from .command_result import CommandResult
from .create_table import create_table
from .deletion_vectors import DeletionVectorDescriptor
from .errors import CloneTargetExistsError
from .file_actions import add_actions, remove_actions, storage_path
from .identity import with_merged_high_water_marks
from .table import Table


@dataclass(frozen=True)
class CloneMetrics:
    """delta-spark's CLONE metrics."""

    source_table_size: int
    source_num_of_files: int
    num_removed_files: int
    num_copied_files: int
    removed_files_size: int
    copied_files_size: int

    def as_operation_metrics(self) -> dict[str, int]:
        return {
            "sourceTableSize": self.source_table_size,
            "sourceNumOfFiles": self.source_num_of_files,
            "numRemovedFiles": self.num_removed_files,
            "numCopiedFiles": self.num_copied_files,
            "removedFilesSize": self.removed_files_size,
            "copiedFilesSize": self.copied_files_size,
        }


def _file_uri(location: str) -> str:
    """A decoded location (local path or object-store URL) as an absolute, encoded log path."""
    url = re.match(r"[A-Za-z][A-Za-z0-9+.-]*://[^/]*", location)
    if url:
        return url.group(0) + quote(location[url.end() :], safe="/")
    return "file://" + quote(location, safe="/")


def _shallow(add: AddFile, source_root: str) -> AddFile:
    """``add`` naming the source's file (and DV file) absolutely."""
    vector = add.deletion_vector
    if vector and vector.get("storageType") == "u":
        location = DeletionVectorDescriptor.from_dict(vector).absolute_path(source_root)
        vector = {**vector, "storageType": "p", "pathOrInlineDv": _file_uri(location or "")}
    return replace(add, path=_file_uri(storage_path(source_root, add.path)), deletion_vector=vector)


def _local_name(add: AddFile, source_root: str) -> str:
    """Where a deep clone puts ``add``'s file: its relative path, or for an absolute one, its name at the root."""
    if ":" not in add.path.split("/")[0] and not add.path.startswith("/"):
        return add.path
    return quote(os.path.basename(storage_path(source_root, add.path)))


def _deep(source: Table, target_root: str, adds: list[AddFile]) -> tuple[list[AddFile], list[tuple[str, str]]]:
    """The clone's adds, and the (from, to) storage paths of every data and DV file to copy."""
    local, pairs = [], []
    for add in adds:
        name = _local_name(add, source.root)
        local.append(replace(add, path=name))
        pairs.append((storage_path(source.root, add.path), storage_path(target_root, name)))
        if add.deletion_vector and add.deletion_vector.get("storageType") == "u":
            descriptor = DeletionVectorDescriptor.from_dict(add.deletion_vector)
            pairs.append((descriptor.absolute_path(source.root) or "", descriptor.absolute_path(target_root) or ""))
    return local, sorted(set(pairs))


def clone(
    source: Table,
    target_root: str,
    shallow: bool,
    version: int | None = None,
    timestamp: datetime | str | int | None = None,
    replace_target: bool = False,
    properties: dict[str, str] | None = None,
    parallelism: int = 8,
) -> CommandResult:
    """Clone ``source`` (at ``version`` / ``timestamp``, else its latest) to ``target_root``, with delta-spark's metrics."""
    snapshot = source.snapshot(version=version, timestamp=timestamp)
    target = Table(target_root)
    existing = target.snapshot() if target.exists() else None
    if existing is not None and not replace_target:
        raise CloneTargetExistsError(f"{target.root}: cannot clone {source.root} here: a Delta table already exists")
    untracked = target.untracked_data_file() if existing is None else None
    if untracked is not None:
        raise CloneTargetExistsError(
            f"{target.root}: cannot clone {source.root} here: the location is not a Delta table but holds data files "
            f"(e.g. {untracked}), which the clone would hide and VACUUM would delete; use an empty location"
        )
    adds = add_actions(snapshot.files)
    copied_size = int(pc.sum(snapshot.files.column("size")).as_py() or 0) if not shallow else 0
    if shallow:
        adds = [_shallow(a, source.root) for a in adds]
    else:
        adds, pairs = _deep(source, target.root, adds)
        with ThreadPoolExecutor(max_workers=parallelism) as pool:
            list(pool.map(lambda pair: target.storage.copy(*pair), pairs))
    removed = existing.files if existing is not None else pa.table({"size": pa.array([], pa.int64())})
    source_metadata = snapshot.metadata
    if existing is not None:  # a replaced table's identity values stay used (delta-spark merges the marks)
        source_metadata = with_merged_high_water_marks(source_metadata, existing.metadata)
    new = create_table(
        target.root,
        source_metadata.schema_string or "",
        source_metadata.partition_columns,
        properties,
        allow_arbitrary_properties=True,
        inherited_configuration=source_metadata.configuration,
        description=source_metadata.description,
        name=source_metadata.name,
        protocol=snapshot.protocol,
    )
    actions: list[Action] = list(new.actions)
    if existing is not None:
        actions += remove_actions(existing.files, data_change=True)
    actions += adds
    metrics = CloneMetrics(
        snapshot.size_in_bytes,
        snapshot.num_files,
        removed.num_rows,
        0 if shallow else snapshot.num_files,
        int(pc.sum(removed.column("size")).as_py() or 0),
        copied_size,
    )
    parameters = {"source": source.root, "sourceVersion": snapshot.version, "isShallow": shallow}
    transaction = target.transaction(read_snapshot=existing)
    operation_metrics = metrics.as_operation_metrics()
    return CommandResult(transaction.commit(actions, "CLONE", parameters, operation_metrics), operation_metrics)

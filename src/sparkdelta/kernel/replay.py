"""Action reconciliation: from a log segment's batches to the active files and tombstones.

The spec's rule: a logical file is identified by its canonical path plus its deletion
vector's unique id; the newest action for that identity wins. Batches arrive newest first.

A checkpoint is reconciled already (PROTOCOL.md, "Checkpoints": the complete replay of
the actions up to its version, canceled ones removed), so it names each file once: its
actions are matched only against the commits after it, never against each other, as
delta-kernel-rs replays too. The commits after it, few, are deduplicated among themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import actions as A
from .file_paths import canonical_paths, escaping_paths, refuse_escaping_paths
from .parsing import ActionBatch, FileActions, conform

RECONCILED_ADD_FIELDS = ("path", "partitionValues", "size", "deletionVector")
"""The add fields every reconciliation decodes: the file's identity and what a reader checks."""


@dataclass(frozen=True)
class FileState:
    """Reconciled file actions: ``active`` in ADD layout (or the fields asked for),
    ``tombstones`` in REMOVE layout."""

    active: pa.Table
    tombstones: pa.Table


def _struct_table(values: pa.StructArray, layout: pa.StructType) -> pa.Table:
    return pa.Table.from_arrays(
        [values.field(i) if len(values) else pa.array([], layout.field(i).type) for i in range(layout.num_fields)],
        schema=pa.schema(list(layout)),
    )


def dv_unique_ids(deletion_vectors: pa.StructArray) -> pa.StringArray:
    """The spec's DV unique id: storageType + pathOrInlineDv (+ '@' offset); '' without a DV."""
    if deletion_vectors.null_count == len(deletion_vectors):  # no DVs: skip building the ids
        return pa.repeat(pa.scalar("", pa.string()), len(deletion_vectors))
    storage = deletion_vectors.field("storageType").fill_null("")
    location = deletion_vectors.field("pathOrInlineDv").fill_null("")
    offset = deletion_vectors.field("offset")
    # The stubs refuse Python strings among ``binary_join_element_wise``'s values; Arrow takes them as scalars.
    with_offset = pc.binary_join_element_wise(storage, location, "@", pc.cast(offset, pa.string()), "")  # type: ignore[call-overload]
    plain = pc.binary_join_element_wise(storage, location, "")  # type: ignore[call-overload]
    ids = pc.if_else(pc.is_null(offset), plain, with_offset)
    return cast(pa.StringArray, pc.if_else(pc.is_null(deletion_vectors), pa.scalar("", pa.string()), pc.fill_null(ids, "")))


@dataclass
class _Candidates:
    """File actions in replay order (newest first; in a log file, adds before removes): each
    one's key, DV id, kind and index among all the adds or all the removes."""

    keys: list[pa.Array[Any]] = field(default_factory=list)
    dv_ids: list[pa.Array[Any]] = field(default_factory=list)
    is_add: list[np.ndarray] = field(default_factory=list)
    index: list[np.ndarray] = field(default_factory=list)

    def append(self, keys: pa.Array[Any], values: pa.StructArray, offset: int, is_add: bool) -> None:
        self.keys.append(keys)
        self.dv_ids.append(dv_unique_ids(cast(pa.StructArray, values.field("deletionVector"))))
        self.is_add.append(np.full(len(values), is_add))
        self.index.append(np.arange(offset, offset + len(values), dtype=np.int64))

    def __len__(self) -> int:
        return sum(len(k) for k in self.keys)

    def kinds_and_indices(self, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        is_add, index = np.concatenate(self.is_add), np.concatenate(self.index)
        return (is_add, index) if rows is None else (is_add[rows], index[rows])


def reconcile(batches: list[ActionBatch], table_root: str, add_fields: Sequence[str] | None = None) -> FileState:
    """Active files and tombstones from ``batches`` ordered newest first.

    ``add_fields``: the active files get only these fields of the add layout, plus
    ``RECONCILED_ADD_FIELDS``, and a checkpoint decodes no others (see
    ``ActionBatch.file_actions_with``); all of them when None.

    An active file whose relative path leads out of ``table_root`` is refused here, where
    its version is known, so no reader, rewrite or VACUUM ever resolves it.
    """
    if add_fields is None:
        layout = A.ADD
        actions = [b.file_actions for b in batches]
    else:
        layout = pa.struct([A.ADD.field(name) for name in dict.fromkeys([*RECONCILED_ADD_FIELDS, *add_fields])])
        actions = [b.file_actions_with(layout.names) for b in batches]
    # The stubs' ``chunked_array`` has no overload for a struct type.
    all_adds: pa.ChunkedArray[Any] = pa.chunked_array([conform(a.adds, layout) for a in actions if len(a.adds)], layout)  # type: ignore[call-overload]
    all_removes: pa.ChunkedArray[Any] = pa.chunked_array([a.removes for a in actions if len(a.removes)], A.REMOVE)  # type: ignore[call-overload]

    newer, checkpoint = _Candidates(), _Candidates()
    escaping: list[np.ndarray] = []
    add_offset = remove_offset = 0
    for batch, file_actions in zip(batches, actions, strict=True):
        candidates = checkpoint if batch.is_checkpoint else newer
        for values, offset, is_add in ((file_actions.adds, add_offset, True), (file_actions.removes, remove_offset, False)):
            if len(values) == 0:
                continue
            keys = canonical_paths(values.field("path"), table_root)
            candidates.append(keys, values, offset, is_add)
            if is_add:
                leaving = escaping_paths(values.field("path"), keys)
                if pc.any(leaving).as_py():
                    escaping.append(offset + np.flatnonzero(leaving.to_numpy(zero_copy_only=False)))
        add_offset += len(file_actions.adds)
        remove_offset += len(file_actions.removes)

    won_add, winner_index = _winners(newer, checkpoint)
    active_index = winner_index[won_add]
    if escaping:
        _refuse_escapes(batches, actions, all_adds, np.concatenate(escaping), active_index, table_root)
    # Nothing shadowed (the usual case) leaves every add active, in order: a plain copy.
    active = all_adds.combine_chunks() if len(active_index) == len(all_adds) else all_adds.take(active_index).combine_chunks()
    tombstones = all_removes.take(pa.array(winner_index[~won_add], pa.int64())).combine_chunks()
    return FileState(
        _struct_table(cast(pa.StructArray, active), layout), _struct_table(cast(pa.StructArray, tombstones), A.REMOVE)
    )


def _winners(newer: _Candidates, checkpoint: _Candidates) -> tuple[np.ndarray, np.ndarray]:
    """The winning candidates, in replay order, as (is an add, index among the adds or removes):
    the first of each (key, DV id) among the commits, then the checkpoint's candidates that
    none of those commits names."""
    if len(newer):
        first = _first_of_each(pa.chunked_array(newer.keys, pa.string()), pa.chunked_array(newer.dv_ids, pa.string()))
        won_add, winner_index = newer.kinds_and_indices(first)
    else:
        won_add, winner_index = np.zeros(0, bool), np.zeros(0, np.int64)
    if len(checkpoint):
        kept = np.flatnonzero(~_named_by(checkpoint, newer))
        kept_add, kept_index = checkpoint.kinds_and_indices(kept)
        won_add, winner_index = np.concatenate([won_add, kept_add]), np.concatenate([winner_index, kept_index])
    return won_add, winner_index


def _codes(values: pa.ChunkedArray[Any]) -> np.ndarray:
    """Each value's position among the distinct values, in order of first appearance."""
    encoded = cast("pa.DictionaryArray[Any, Any]", pc.dictionary_encode(values).combine_chunks())
    return encoded.indices.to_numpy()


def _first_of_each(keys: pa.ChunkedArray[Any], dv_ids: pa.ChunkedArray[Any]) -> np.ndarray:
    """Position of the first (newest) candidate of each distinct (key, DV id), ascending."""
    key_codes, dv_codes = _codes(keys), _codes(dv_ids)
    pairs = key_codes.astype(np.int64) * (int(dv_codes.max()) + 1) + dv_codes
    _, first = np.unique(pairs, return_index=True)
    first.sort()
    return first


def _named_by(checkpoint: _Candidates, newer: _Candidates) -> np.ndarray:
    """Which of the checkpoint's candidates one of the ``newer`` candidates names too (same
    key and DV id). Keys are probed against the commits' few keys; only the matches have
    their DV ids compared."""
    keys = pa.chunked_array(checkpoint.keys, pa.string())
    if not len(newer):
        return np.zeros(len(keys), bool)
    newer_keys = pa.chunked_array(newer.keys, pa.string()).combine_chunks()
    named = pc.is_in(keys, value_set=newer_keys).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(named)
    if len(rows):
        pairs = set(zip(newer_keys.to_pylist(), pa.chunked_array(newer.dv_ids, pa.string()).to_pylist(), strict=True))
        dv_ids = pa.chunked_array(checkpoint.dv_ids, pa.string()).take(pa.array(rows, pa.int64())).to_pylist()
        named[rows] = [pair in pairs for pair in zip(keys.take(pa.array(rows, pa.int64())).to_pylist(), dv_ids, strict=True)]
    return named


def _refuse_escapes(
    batches: list[ActionBatch],
    actions: list[FileActions],
    all_adds: pa.ChunkedArray[Any],
    escaping: np.ndarray,
    active_index: np.ndarray,
    table_root: str,
) -> None:
    """``refuse_escaping_paths`` for the active adds among ``escaping`` (indices among all the
    adds), each named with the version that added it."""
    rows = np.intersect1d(escaping, active_index)
    if not len(rows):
        return
    versions = np.repeat(np.array([b.version for b in batches], np.int64), [len(a.adds) for a in actions])
    paths = pc.struct_field(all_adds.take(pa.array(rows)), "path").combine_chunks()
    refuse_escaping_paths(paths, canonical_paths(paths, table_root), pa.array(versions[rows]), table_root)

"""Action reconciliation: from a log segment's batches to the active files and tombstones.

The spec's rule: a logical file is identified by its canonical path plus its deletion
vector's unique id; the newest action for that identity wins. Batches arrive newest first,
and the whole reconciliation is one ordered hash aggregation in Arrow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import actions as A
from .file_paths import canonical_paths, refuse_escaping_paths
from .parsing import ActionBatch


@dataclass(frozen=True)
class FileState:
    """Reconciled file actions: ``active`` in ADD layout, ``tombstones`` in REMOVE layout."""

    active: pa.Table
    tombstones: pa.Table


def _struct_table(values: pa.Array, layout: pa.StructType) -> pa.Table:
    return pa.Table.from_arrays(
        [values.field(i) if len(values) else pa.array([], layout.field(i).type) for i in range(layout.num_fields)],
        schema=pa.schema(list(layout)),
    )


def dv_unique_ids(deletion_vectors: pa.Array) -> pa.Array:
    """The spec's DV unique id: storageType + pathOrInlineDv (+ '@' offset); '' without a DV."""
    if len(deletion_vectors) == 0:
        return pa.array([], pa.string())
    storage = pc.fill_null(deletion_vectors.field("storageType"), "")
    location = pc.fill_null(deletion_vectors.field("pathOrInlineDv"), "")
    offset = deletion_vectors.field("offset")
    with_offset = pc.binary_join_element_wise(storage, location, "@", pc.cast(offset, pa.string()), "")
    plain = pc.binary_join_element_wise(storage, location, "")
    ids = pc.if_else(pc.is_null(offset), plain, with_offset)
    return pc.if_else(pc.is_null(deletion_vectors), pa.scalar("", pa.string()), pc.fill_null(ids, ""))


def _refuse_escapes(batches: list[ActionBatch], paths: pa.Array, keys: pa.Array, add_index: pa.Array, table_root: str) -> None:
    """``refuse_escaping_paths`` for the active adds, each named with the version that added it."""
    versions = np.repeat(np.array([b.version for b in batches], np.int64), [len(b.adds) for b in batches])
    refuse_escaping_paths(paths, keys, pa.array(versions).take(add_index), table_root)


def reconcile(batches: list[ActionBatch], table_root: str) -> FileState:
    """Active files and tombstones from ``batches`` ordered newest first.

    An active file whose relative path leads out of ``table_root`` is refused here, where
    its version is known, so no reader, rewrite or VACUUM ever resolves it.
    """
    adds = [b.adds for b in batches if len(b.adds)]
    removes = [b.removes for b in batches if len(b.removes)]
    all_adds = pa.concat_arrays(adds) if adds else pa.array([], A.ADD)
    all_removes = pa.concat_arrays(removes) if removes else pa.array([], A.REMOVE)

    keys, dv_ids, is_add, index = [], [], [], []
    add_offset = remove_offset = 0
    for batch in batches:
        # Within one commit an add outranks a remove of the same file.
        for values, offset, flag in ((batch.adds, add_offset, True), (batch.removes, remove_offset, False)):
            if len(values) == 0:
                continue
            keys.append(canonical_paths(values.field("path"), table_root))
            dv_ids.append(dv_unique_ids(values.field("deletionVector")))
            is_add.append(pa.array(np.full(len(values), flag)))
            index.append(pa.array(np.arange(offset, offset + len(values), dtype=np.int64)))
        add_offset += len(batch.adds)
        remove_offset += len(batch.removes)

    if not keys:
        return FileState(_struct_table(all_adds, A.ADD), _struct_table(all_removes, A.REMOVE))
    candidates = pa.table(
        {
            "key": pa.concat_arrays(keys),
            "dv": pa.concat_arrays(dv_ids),
            "is_add": pa.concat_arrays(is_add),
            "index": pa.concat_arrays(index),
        }
    )
    winners = candidates.group_by(["key", "dv"], use_threads=False).aggregate([("is_add", "first"), ("index", "first")])
    won_add = winners.column("is_add_first")
    active_index = pc.filter(winners.column("index_first"), won_add).combine_chunks()
    active = all_adds.take(active_index)
    active_keys = pc.filter(winners.column("key"), won_add).combine_chunks()
    _refuse_escapes(batches, active.field("path"), active_keys, active_index, table_root)
    tombstones = all_removes.take(pc.filter(winners.column("index_first"), pc.invert(won_add)))
    return FileState(
        _struct_table(active, A.ADD),
        _struct_table(tombstones.combine_chunks() if isinstance(tombstones, pa.ChunkedArray) else tombstones, A.REMOVE),
    )

"""Action reconciliation: from a log segment's batches to the active files and tombstones.

The spec's rule: a logical file is identified by its canonical path plus its deletion
vector's unique id; the newest action for that identity wins. Batches arrive newest first,
and the whole reconciliation is one ordered hash aggregation in Arrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import actions as A
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


def canonical_paths(paths: pa.Array, table_root: str) -> pa.Array:
    """Paths keyed so that different spellings of one file compare equal.

    Absolute ``file:`` forms (``/p``, ``file:/p``, ``file:///p``) are unified, and absolute
    paths inside the table become relative, as relative paths stay.
    """
    if len(paths) == 0:
        return paths
    absolute = pc.or_(pc.starts_with(paths, "/"), pc.match_substring_regex(paths, r"^[A-Za-z][A-Za-z0-9+.-]*:"))
    if not pc.any(absolute).as_py():
        return paths
    unified = pc.replace_substring_regex(paths, r"^file://(/|localhost/)", "file:/")
    unified = pc.replace_substring_regex(unified, r"^/", "file:/")
    root_prefix = "file:" + quote(table_root.rstrip("/"), safe="/") + "/"
    inside = pc.starts_with(unified, root_prefix)
    relative = pc.utf8_slice_codeunits(unified, len(root_prefix))
    return pc.if_else(inside, relative, unified)


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


def reconcile(batches: list[ActionBatch], table_root: str) -> FileState:
    """Active files and tombstones from ``batches`` ordered newest first."""
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
    active = all_adds.take(pc.filter(winners.column("index_first"), won_add))
    tombstones = all_removes.take(pc.filter(winners.column("index_first"), pc.invert(won_add)))
    return FileState(
        _struct_table(active.combine_chunks() if isinstance(active, pa.ChunkedArray) else active, A.ADD),
        _struct_table(tombstones.combine_chunks() if isinstance(tombstones, pa.ChunkedArray) else tombstones, A.REMOVE),
    )

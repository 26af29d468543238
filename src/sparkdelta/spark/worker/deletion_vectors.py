"""The executors' half of deletion vectors: expanding DVs for reads, gathering deleted rows for DML.

Both run in ``mapInArrow`` on Spark's Python workers, shipped by value (see the package
docstring), so they use nothing but the rows Spark hands them: a DV's bytes come from
Spark's own ``binaryFile`` reader (through the server's file systems, with the
credentials of the data files) or from the log itself, and the DVs DML writes go back to
the client, which writes them through the kernel's storage.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .roaring import cardinality, decode, encode, last_row, merge_words, words_of

# What ``expand_deletion_vectors`` reads: per row, one DV file's bytes (or one inline DV's
# data, with no DV file), and the DVs of data files in it.
DV_FILE = "__sparkdelta_dv_file"  # the DV file, as the kernel names it; null for an inline DV
CONTENT = "__sparkdelta_dv_content"  # the DV file's bytes, or the inline DV's data
ENTRIES = "__sparkdelta_dv_entries"  # list of ENTRY structs
# What ``expand_read_deletion_vectors`` reads instead: per row, a key of the lookup it is given
# (a DV file as Spark spells it, or an inline DV's own key) and that DV file's or DV's bytes.
DV_KEY = "__sparkdelta_dv_key"
FILE_ID, DATA_FILE, OFFSET, SIZE, CARDINALITY = "file_id", "data_file", "offset", "size", "cardinality"
ENTRY = pa.struct(
    [
        pa.field(FILE_ID, pa.int64(), False),
        pa.field(DATA_FILE, pa.string(), False),
        pa.field(OFFSET, pa.int64()),  # null for an inline DV (the spec reads an absent one as 1 in a file)
        pa.field(SIZE, pa.int64(), False),
        pa.field(CARDINALITY, pa.int64(), False),
    ]
)
# What it returns: (file number, word, mask) of every 64-row word holding deleted rows.
DELETED_FILE_ID = "__sparkdelta_deleted_file_id"
DELETED_WORD = "__sparkdelta_deleted_word"
MASK = "__sparkdelta_mask"
DELETED_WORDS = pa.schema(
    [pa.field(DELETED_FILE_ID, pa.int64(), False), pa.field(DELETED_WORD, pa.int64(), False), pa.field(MASK, pa.int64(), False)]
)
# Bounds the Arrow batches of deleted words.
_WORDS_PER_BATCH = 1 << 20
_FILE_FORMAT_VERSION = 1

# What ``deleted_rows_by_file`` returns, per data file: its newly deleted rows.
PATH, ROWS, LAST_ROW, DV = "path", "rows", "last_row", "dv"
_DELETED_ROWS_FIELDS: list[pa.Field] = [
    pa.field(PATH, pa.string(), False),
    pa.field(ROWS, pa.int64(), False),  # how many
    pa.field(LAST_ROW, pa.int64(), False),  # the highest
    pa.field(DV, pa.binary(), False),  # all of them, as a RoaringBitmapArray
]
DELETED_ROWS = pa.schema(_DELETED_ROWS_FIELDS)


def expand_deletion_vectors(table_root: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """DV files (or inline DVs) with their entries in, ``DELETED_WORDS`` out.

    Each DV is framed, checked and decoded as the kernel's ``read_deletion_vector`` does,
    and fails the task naming the table, the data file and the DV when a check fails.
    """
    ids: list[np.ndarray] = []
    words: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    pending = 0
    for batch in batches:
        files = batch.column(DV_FILE).to_pylist()
        contents = batch.column(CONTENT).to_pylist()
        for dv_file, content, entries in zip(files, contents, batch.column(ENTRIES).to_pylist(), strict=True):
            for entry in entries or ():
                entry_words, entry_masks = _entry_words(table_root, dv_file, content, entry)
                ids.append(np.full(len(entry_words), entry[FILE_ID], np.int64))
                words.append(entry_words)
                masks.append(entry_masks)
                pending += len(entry_words)
                if pending >= _WORDS_PER_BATCH:
                    yield _words_batch(ids, words, masks)
                    ids, words, masks, pending = [], [], [], 0
    if pending:
        yield _words_batch(ids, words, masks)


def expand_read_deletion_vectors(
    table_root: str, lookup: pa.Table, unmatched: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """(``DV_KEY``, ``CONTENT``) rows in, ``DELETED_WORDS`` out: ``expand_deletion_vectors``
    over each row's DV file and entries, found by its key in ``lookup`` (``DV_KEY``,
    ``DV_FILE``, ``ENTRIES``, one row per key).

    The lookup is shipped with the function, not joined in Spark: a join and the aggregate
    that drops ``binaryFile``'s hidden ``_metadata`` cost a read two more stages. A key
    the lookup lacks (a DV file Spark spells differently) fails the task with
    ``unmatched`` and the key, since its DVs' deleted rows would otherwise come back.
    """
    rows = {key: i for i, key in enumerate(cast(list[str], lookup.column(DV_KEY).to_pylist()))}
    dv_files, entries = lookup.column(DV_FILE), lookup.column(ENTRIES)

    def with_entries() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keys = cast(list[str], batch.column(DV_KEY).to_pylist())
            missing = next((key for key in keys if key not in rows), None)
            if missing is not None:
                raise ValueError(f"sparkdelta: Spark read deletion vector file {missing}, {unmatched}")
            at = pa.array([rows[key] for key in keys], pa.int64())
            yield pa.RecordBatch.from_arrays(
                [dv_files.take(at).combine_chunks(), batch.column(CONTENT), entries.take(at).combine_chunks()],
                names=[DV_FILE, CONTENT, ENTRIES],
            )

    yield from expand_deletion_vectors(table_root, with_entries())


def _words_batch(ids: list[np.ndarray], words: list[np.ndarray], masks: list[np.ndarray]) -> pa.RecordBatch:
    columns = [np.concatenate(ids), np.concatenate(words), np.concatenate(masks).view(np.int64)]
    return pa.RecordBatch.from_arrays([pa.array(c) for c in columns], schema=DELETED_WORDS)


def _entry_words(
    table_root: str, dv_file: str | None, content: bytes | None, entry: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """One data file's deleted words, from its DV's bytes, checked against its descriptor."""
    where = "inline" if dv_file is None else f"in {dv_file} at offset {entry[OFFSET]}"
    try:
        if content is None:
            raise ValueError("Spark read no bytes for it")
        data = content if dv_file is None else _framed(content, entry[OFFSET], entry[SIZE])
        words, masks = decode(data)
        if cardinality(masks) != entry[CARDINALITY]:
            raise ValueError(f"it holds {cardinality(masks)} row indexes, the log's cardinality is {entry[CARDINALITY]}")
    except ValueError as exc:
        raise ValueError(f"{table_root}: deletion vector of data file {entry[DATA_FILE]} ({where}) is unreadable: {exc}") from exc
    return words, masks


def _framed(content: bytes, offset: int | None, size: int) -> bytes:
    """One DV's data from a DV file's bytes, with its framing (version, size, CRC-32) checked."""
    # The spec reads an absent offset as 0, but byte 0 is the version: the first DV is at 1.
    offset = 1 if offset is None else offset
    if offset < 1 or size < 4:
        raise ValueError(f"offset {offset} and size {size} cannot frame a DV (offset >= 1, size >= 4)")
    if content[:1] != bytes([_FILE_FORMAT_VERSION]):
        raise ValueError(f"file format version {content[:1].hex() or 'missing'}, expected {_FILE_FORMAT_VERSION}")
    end = offset + 4 + size + 4
    if len(content) < end:
        raise ValueError(f"file ends {max(0, len(content) - offset)} bytes after offset {offset}; the DV needs {4 + size + 4}")
    (stored_size,) = struct.unpack_from(">I", content, offset)
    if stored_size != size:
        raise ValueError(f"size at offset {offset} is {stored_size} bytes, the log says {size}")
    data = content[offset + 4 : offset + 4 + size]
    (stored_crc,) = struct.unpack_from(">I", content, offset + 4 + size)
    if zlib.crc32(data) != stored_crc:
        raise ValueError(f"CRC-32 checksum mismatch: stored {stored_crc:08x}, data has {zlib.crc32(data):08x}")
    return data


def deleted_rows_by_file(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(data file, row index) rows in (all of a file's in one task), ``DELETED_ROWS`` out: one row per file.

    Rows are gathered per file as 64-row words batch by batch, so a task holds two longs
    per 64 densely deleted rows, not one per row; a row named twice counts once.
    """
    gathered: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for batch in batches:
        if batch.num_rows == 0:
            continue
        paths, rows = batch.column(0), batch.column(1)
        if paths.null_count or rows.null_count:
            raise ValueError("sparkdelta: a row to delete has no data file or no row index")
        codes = cast(pa.DictionaryArray, pc.dictionary_encode(paths))
        indexes = codes.indices.to_numpy()
        row_numbers = rows.to_numpy().astype(np.uint64)
        order = np.argsort(indexes, kind="stable")
        bounds = np.searchsorted(indexes[order], np.arange(len(codes.dictionary) + 1))
        for code, path in enumerate(cast(list[str], codes.dictionary.to_pylist())):
            gathered.setdefault(path, []).append(words_of(row_numbers[order[bounds[code] : bounds[code + 1]]]))
    if not gathered:
        return
    counts, last_rows, dvs = [], [], []
    for parts in gathered.values():
        words, masks = (
            parts[0]
            if len(parts) == 1
            else merge_words(np.concatenate([w for w, _ in parts]), np.concatenate([m for _, m in parts]))
        )
        counts.append(cardinality(masks))
        last_rows.append(last_row(words, masks))
        dvs.append(encode(words, masks))
    yield pa.RecordBatch.from_arrays(
        [
            pa.array(list(gathered), pa.string()),
            pa.array(counts, pa.int64()),
            pa.array(last_rows, pa.int64()),
            pa.array(dvs, pa.binary()),
        ],
        schema=DELETED_ROWS,
    )

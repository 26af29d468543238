"""A Parquet file's footer (row counts, column statistics) without reading its data.

Writers describe each new file in the log from its footer. On an object store that is
one ranged GET of the file's tail (two when the footer is larger than the guess), where
reading the file would fetch all of it.
"""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.parquet as pq

from .storage import Storage

_TAIL_GUESS = 64 * 1024  # holds the footer of all but very wide files
_TRAILER = 8  # footer length (int32, little-endian) and "PAR1"


def parquet_metadata(storage: Storage, path: str, size: int) -> pq.FileMetaData:
    """The footer of the ``size``-byte Parquet file at ``path``."""
    local = storage.local_path(path)
    if local is not None:
        return pq.read_metadata(local)
    if size < 12:
        raise ValueError(f"{path}: {size} bytes is too short for a Parquet file")
    tail = storage.read_range(path, max(0, size - _TAIL_GUESS), size)
    if tail[-4:] != b"PAR1":
        raise ValueError(f"{path}: not a Parquet file (no PAR1 magic at its end)")
    (footer_length,) = struct.unpack("<i", tail[-_TRAILER:-4])
    needed = footer_length + _TRAILER
    if needed > size:
        raise ValueError(f"{path}: its footer claims {footer_length} bytes, more than the file's {size}")
    if needed > len(tail):
        tail = storage.read_range(path, size - needed, size)
    return pq.read_metadata(pa.BufferReader(tail))

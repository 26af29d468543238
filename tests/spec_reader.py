"""Rows of a Delta table read by the spec alone: pyarrow for the Parquet files, pyroaring for deletion vectors.

delta-rs (deltalake 1.6.6) refuses tables with the ``deletionVectors`` reader feature, so
for those tables this is the independent reader: it shares no code with sparkdelta's
scan or DV decoder. Only the list of active files comes from our kernel, whose log
replay the conformance and interop tests check against delta-rs.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyroaring import BitMap

from sparkdelta.kernel import Table

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_BITMAP_ARRAY_MAGIC = 1681511377


def z85_decode(text: str) -> bytes:
    out = bytearray()
    for start in range(0, len(text), 5):
        value = 0
        for char in text[start : start + 5]:
            value = value * 85 + _Z85.index(char)
        out += value.to_bytes(4, "big")
    return bytes(out)


def _bitmap_array(data: bytes) -> set[int]:
    """The spec's RoaringBitmapArray: magic, bucket count, then (high 32 bits, portable bitmap) pairs."""
    (magic,) = struct.unpack_from("<i", data, 0)
    assert magic == _BITMAP_ARRAY_MAGIC, f"bad magic {magic}"
    (buckets,) = struct.unpack_from("<q", data, 4)
    offset, rows = 12, set()
    for _ in range(buckets):
        (high,) = struct.unpack_from("<i", data, offset)
        bitmap = BitMap.deserialize(data[offset + 4 :])
        offset += 4 + len(bitmap.serialize())
        rows.update((high << 32) | low for low in bitmap)
    return rows


def deleted_rows(root: str, dv: dict[str, Any]) -> set[int]:
    """Row indexes a deletion vector descriptor marks deleted."""
    kind, where = dv["storageType"], dv["pathOrInlineDv"]
    if kind == "i":
        return _bitmap_array(z85_decode(where))
    if kind == "u":
        prefix, encoded = where[:-20], where[-20:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        file = Path(root) / prefix / name
    else:
        file = Path(unquote(urlparse(where).path))
    blob = file.read_bytes()
    offset = dv.get("offset") or 1  # byte 0 is the file format version
    (size,) = struct.unpack_from(">i", blob, offset)
    data = blob[offset + 4 : offset + 4 + size]
    (checksum,) = struct.unpack_from(">I", blob, offset + 4 + size)
    assert zlib.crc32(data) == checksum, f"{file}: checksum mismatch"
    rows = _bitmap_array(data)
    assert len(rows) == dv["cardinality"]
    return rows


def spec_rows(root: str, columns: list[str], partition_types: dict[str, pa.DataType]) -> list[dict[str, Any]]:
    """The live rows of the latest snapshot, as dicts of ``columns``."""
    result: list[dict[str, Any]] = []
    for add in Table(root).snapshot().files.to_pylist():
        data = pq.read_table(Path(root) / unquote(add["path"]))
        if add["deletionVector"] is not None:
            gone = pa.array(sorted(deleted_rows(root, add["deletionVector"])), pa.int64())
            keep = pc.invert(pc.is_in(pa.array(range(data.num_rows), pa.int64()), value_set=gone))
            data = data.filter(keep)
        partition = dict(add["partitionValues"] or [])
        for name, data_type in partition_types.items():
            value = partition.get(name)
            data = data.append_column(name, pa.array([value] * data.num_rows, pa.string()).cast(data_type))
        result.extend(data.select(columns).to_pylist())
    return result

"""Deletion vectors: which rows of a data file a logical file no longer holds.

A deletion vector (DV) marks rows as deleted without rewriting the data file: readers
must drop those rows. The log's descriptor says where the DV is (inline in the log as
Z85 text, or in a DV file next to the data), how big it is and how many rows it deletes.
The DV itself is a RoaringBitmapArray: a little-endian magic number, then a 64-bit
roaring bitmap in the portable format (bucket count, then per bucket a 32-bit key and
a 32-bit roaring bitmap), which pyroaring's ``BitMap64`` reads natively. In a DV file,
each DV is framed big-endian as size, data, CRC-32 of the data, after a version byte.

Everything a descriptor claims is checked (magic, size, checksum, cardinality): a
mismatch means a corrupt or misread DV, and returning rows a DV deletes is never
acceptable. Errors name the table, the data file and the DV.

Writing is the reverse: ``write_deletion_vectors`` stores several serialized DVs in one
new ``deletion_vector_<uuid>.bin`` file (as delta-spark does per task) and returns their
``u`` descriptors; ``inline_descriptor`` keeps a small DV in the log instead.
"""

from __future__ import annotations

import array
import base64
import struct
import uuid
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import unquote, urlparse

import numpy as np
from pyroaring import BitMap64

from .errors import DeletionVectorError
from .storage import Storage

# RoaringBitmapArray in the portable 64-bit format (the spec's only format).
MAGIC = 1681511377
# delta-spark's native-serialization variant, which the spec does not define.
_NATIVE_MAGIC = 1681511376
_FILE_FORMAT_VERSION = 1
# A UUID (16 bytes) is 20 Z85 characters; any characters before it are a directory prefix.
_UUID_Z85_LENGTH = 20
# DV files read at once (each a request on an object store).
_READ_THREADS = 8

_Z85_ALPHABET = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_B85_ALPHABET = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
_Z85_TO_B85 = bytes.maketrans(_Z85_ALPHABET, _B85_ALPHABET)
_Z85_CHARS = frozenset(_Z85_ALPHABET.decode())


@dataclass(frozen=True)
class DeletionVectorDescriptor:
    """The log's ``deletionVector`` struct of an ``add`` or ``remove`` action."""

    storage_type: str
    path_or_inline_dv: str
    offset: int | None
    size_in_bytes: int
    cardinality: int

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> DeletionVectorDescriptor:
        missing = [name for name in ("storageType", "pathOrInlineDv", "sizeInBytes", "cardinality") if raw.get(name) is None]
        if missing:
            raise DeletionVectorError(f"malformed deletionVector descriptor {dict(raw)}: no {', '.join(missing)}")
        offset = raw.get("offset")
        return cls(
            storage_type=str(raw["storageType"]),
            path_or_inline_dv=str(raw["pathOrInlineDv"]),
            offset=None if offset is None else int(offset),
            size_in_bytes=int(raw["sizeInBytes"]),
            cardinality=int(raw["cardinality"]),
        )

    def to_dict(self) -> dict[str, Any]:
        """The log's JSON form (``offset`` left out for inline DVs, as the spec has it)."""
        raw: dict[str, Any] = {
            "storageType": self.storage_type,
            "pathOrInlineDv": self.path_or_inline_dv,
            "offset": self.offset,
            "sizeInBytes": self.size_in_bytes,
            "cardinality": self.cardinality,
        }
        return {k: v for k, v in raw.items() if v is not None}

    @property
    def unique_id(self) -> str:
        """Identifies the DV among a file's DVs (the spec's ``uniqueId``: storage type, path, offset)."""
        suffix = "" if self.offset is None else f"@{self.offset}"
        return f"{self.storage_type}{self.path_or_inline_dv}{suffix}"

    def absolute_path(self, table_root: str) -> str | None:
        """Where the DV file is, as a storage path; None for an inline DV.

        ``u``: ``<root>/<prefix>/deletion_vector_<uuid>.bin`` from an optional prefix and
        a Z85-encoded UUID. ``p``: the path itself, encoded like an ``add`` path.
        """
        if self.storage_type == "i":
            return None
        if self.storage_type == "u":
            encoded = self.path_or_inline_dv
            if len(encoded) < _UUID_Z85_LENGTH:
                raise ValueError(f"relative DV path {encoded!r} is shorter than a Z85 UUID ({_UUID_Z85_LENGTH} characters)")
            prefix, encoded_uuid = encoded[:-_UUID_Z85_LENGTH], encoded[-_UUID_Z85_LENGTH:]
            name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded_uuid))}.bin"
            return f"{table_root}/{prefix}/{name}" if prefix else f"{table_root}/{name}"
        if self.storage_type == "p":
            return _storage_path(self.path_or_inline_dv)
        raise ValueError(f"unknown DV storage type {self.storage_type!r} (expected 'u', 'i' or 'p')")


def _storage_path(path: str) -> str:
    """A ``p`` DV's URI as a storage path: ``file:`` URIs and bare paths decoded, others kept."""
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return unquote(parsed.path)
    return path


def z85_decode(text: str) -> bytes:
    """Bytes of Z85 ``text`` (ZeroMQ RFC 32).

    Z85 is base85 with another alphabet, so the standard library's base85 decoder does
    the work after a translation (as Python 3.13's ``base64.z85decode`` does).
    """
    if len(text) % 5 or not _Z85_CHARS.issuperset(text):
        raise ValueError(f"not Z85 text (length a multiple of 5, alphabet {_Z85_ALPHABET.decode()}): {text[:40]!r}")
    return base64.b85decode(text.encode("ascii").translate(_Z85_TO_B85))


def z85_encode(data: bytes) -> str:
    """Z85 text of ``data``, zero-padded to a multiple of 4 bytes (readers cut it back to ``sizeInBytes``)."""
    padded = data + bytes(-len(data) % 4)
    return base64.b85encode(padded).translate(bytes.maketrans(_B85_ALPHABET, _Z85_ALPHABET)).decode("ascii")


def bitmap_of(indexes: Iterable[int] | np.ndarray) -> BitMap64:
    """A 64-bit roaring bitmap of row indexes; numpy arrays are copied in C, not per element."""
    if isinstance(indexes, np.ndarray):
        values = array.array("Q")
        values.frombytes(np.ascontiguousarray(indexes, dtype=np.uint64).tobytes())
        return BitMap64(values)
    return BitMap64(indexes)


def encode_bitmap_array(bitmap: BitMap64) -> bytes:
    """A RoaringBitmapArray: the magic number, then the bitmap in the portable 64-bit format."""
    if bitmap and bitmap.max() >= 1 << 63:
        raise ValueError(f"row index {bitmap.max()} does not fit a signed 64-bit integer")
    # No run_optimize: delta-spark writes array and bitmap containers only, and readers
    # built on older roaring libraries cannot read run containers.
    return struct.pack("<I", MAGIC) + bitmap.serialize()


def relative_dv_path(dv_uuid: uuid.UUID, prefix: str = "") -> str:
    """A ``u`` descriptor's ``pathOrInlineDv``: the directory prefix, then the Z85-encoded UUID."""
    return prefix + z85_encode(dv_uuid.bytes)


def inline_descriptor(bitmap: BitMap64) -> DeletionVectorDescriptor:
    """An ``i`` descriptor carrying the DV itself, for DVs small enough to sit in the log."""
    data = encode_bitmap_array(bitmap)
    return DeletionVectorDescriptor("i", z85_encode(data), None, len(data), len(bitmap))


def write_deletion_vectors(
    storage: Storage, table_root: str, vectors: Sequence[tuple[bytes, int]], prefix: str = ""
) -> list[DeletionVectorDescriptor]:
    """Store ``vectors`` (each a serialized RoaringBitmapArray and its cardinality) in one new DV
    file under ``table_root`` (in directory ``prefix``, if given).

    The file is the version byte, then per DV its size, data and CRC-32 (big-endian), so
    each descriptor's offset points at its size field. The name holds a fresh UUID, so the
    file never replaces another; it only takes effect once a commit references it.
    """
    if prefix and (len(prefix) >= _UUID_Z85_LENGTH or not _Z85_CHARS.issuperset(prefix) or "/" in prefix):
        raise ValueError(f"DV directory prefix {prefix!r} must be a few Z85 characters")
    dv_uuid = uuid.uuid4()
    chunks = [bytes([_FILE_FORMAT_VERSION])]
    position = 1
    descriptors = []
    path = relative_dv_path(dv_uuid, prefix)
    for data, cardinality in vectors:
        chunks.append(struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data)))
        descriptors.append(DeletionVectorDescriptor("u", path, position, len(data), cardinality))
        position += 4 + len(data) + 4
    target = descriptors[0].absolute_path(table_root) if descriptors else None
    if target is not None:
        storage.put_if_absent(target, b"".join(chunks))
    return descriptors


def decode_bitmap_array(data: bytes) -> BitMap64:
    """The row indexes of a serialized RoaringBitmapArray (magic number, then the bitmap)."""
    if len(data) < 4:
        raise ValueError(f"{len(data)} bytes is too short for a deletion vector")
    (magic,) = struct.unpack_from("<I", data)
    if magic != MAGIC:
        native = " (delta-spark's native serialization, which the protocol does not define)" if magic == _NATIVE_MAGIC else ""
        raise ValueError(f"magic number {magic}{native}, expected {MAGIC}")
    try:
        bitmap = BitMap64.deserialize(data[4:])
    except (ValueError, IndexError) as exc:
        raise ValueError(f"malformed 64-bit roaring bitmap: {exc}") from exc
    # The spec keeps keys' top bit clear, so every index fits a signed 64-bit row index.
    if bitmap and bitmap.max() >= 1 << 63:
        raise ValueError(f"row index {bitmap.max()} does not fit a signed 64-bit integer")
    return bitmap


def _read_ranges(storage: Storage, path: str, ranges: list[tuple[int, int]]) -> list[bytes]:
    """The bytes at each (start, length) of a file: seeking on local disk, else one whole read."""
    local = storage.local_path(path)
    if local is not None:
        chunks = []
        with open(local, "rb") as f:
            for start, length in ranges:
                f.seek(start)
                chunks.append(f.read(length))
        return chunks
    data = storage.read(path)
    return [data[start : start + length] for start, length in ranges]


def _framing(descriptor: DeletionVectorDescriptor) -> tuple[int, int]:
    """Where a DV's block (size, data, CRC-32) is in its DV file: (offset, length)."""
    # The spec reads an absent offset as 0, but byte 0 is the version: the first DV is at 1.
    offset = 1 if descriptor.offset is None else descriptor.offset
    size = descriptor.size_in_bytes
    if offset < 1 or size < 4:
        raise ValueError(f"offset {offset} and size {size} cannot frame a DV (offset >= 1, size >= 4)")
    return offset, 4 + size + 4


def _unframed(header: bytes, block: bytes, descriptor: DeletionVectorDescriptor) -> bytes:
    """One DV's data from its DV file's version byte and its block, with the framing checked."""
    offset, length = _framing(descriptor)
    size = descriptor.size_in_bytes
    if header != bytes([_FILE_FORMAT_VERSION]):
        raise ValueError(f"file format version {header.hex() or 'missing'}, expected {_FILE_FORMAT_VERSION}")
    if len(block) != length:
        raise ValueError(f"file ends {len(block)} bytes after offset {offset}; the DV needs {length}")
    (stored_size,) = struct.unpack_from(">I", block)
    if stored_size != size:
        raise ValueError(f"size at offset {offset} is {stored_size} bytes, the log says {size}")
    data = block[4 : 4 + size]
    (stored_crc,) = struct.unpack_from(">I", block, 4 + size)
    if zlib.crc32(data) != stored_crc:
        raise ValueError(f"CRC-32 checksum mismatch: stored {stored_crc:08x}, data has {zlib.crc32(data):08x}")
    return data


def _inline_bitmap_bytes(descriptor: DeletionVectorDescriptor) -> bytes:
    """An inline DV's data: Z85 pads to whole 4-byte groups, ``sizeInBytes`` says how much is real."""
    decoded = z85_decode(descriptor.path_or_inline_dv)
    if not descriptor.size_in_bytes <= len(decoded) < descriptor.size_in_bytes + 4:
        raise ValueError(f"inline DV decodes to {len(decoded)} bytes, the log says {descriptor.size_in_bytes}")
    return decoded[: descriptor.size_in_bytes]


@contextmanager
def _naming(table_root: str, data_file: str, where: str) -> Iterator[None]:
    """Turn a DV's failed check or read into a ``DeletionVectorError`` naming the table, the data file and the DV."""
    try:
        yield
    except (ValueError, OSError) as exc:
        raise DeletionVectorError(
            f"{table_root}: deletion vector of data file {data_file} ({where}) is unreadable: {exc}"
        ) from exc


def inline_data(table_root: str, descriptor: DeletionVectorDescriptor, data_file: str) -> bytes:
    """The serialized RoaringBitmapArray an inline (``i``) descriptor carries, its size checked."""
    with _naming(table_root, data_file, "inline"):
        return _inline_bitmap_bytes(descriptor)


def dv_file(table_root: str, descriptor: DeletionVectorDescriptor, data_file: str) -> str | None:
    """``descriptor.absolute_path``, failing as a DV read does (naming the data file) on a bad descriptor."""
    with _naming(table_root, data_file, f"{descriptor.storage_type} {descriptor.path_or_inline_dv}"):
        return descriptor.absolute_path(table_root)


def _checked_indexes(data: bytes, descriptor: DeletionVectorDescriptor) -> np.ndarray:
    bitmap = decode_bitmap_array(data)
    if len(bitmap) != descriptor.cardinality:
        raise ValueError(f"it holds {len(bitmap)} row indexes, the log's cardinality is {descriptor.cardinality}")
    return np.frombuffer(bitmap.to_array(), dtype=np.uint64)


def _read_dv_file(
    storage: Storage, table_root: str, path: str, dvs: Sequence[tuple[int, DeletionVectorDescriptor, str]]
) -> list[tuple[int, np.ndarray]]:
    """The row indexes of ``dvs`` (position, descriptor, data file), all in the DV file at ``path``, read once."""
    first = dvs[0]
    with _naming(table_root, first[2], f"in {path} at offset {first[1].offset}"):
        ranges = [(0, 1)]
        for _, descriptor, _ in dvs:
            ranges.append(_framing(descriptor))
        header, *blocks = _read_ranges(storage, path, ranges)
    read = []
    for (position, descriptor, data_file), block in zip(dvs, blocks, strict=True):
        with _naming(table_root, data_file, f"in {path} at offset {descriptor.offset}"):
            read.append((position, _checked_indexes(_unframed(header, block, descriptor), descriptor)))
    return read


def read_deletion_vectors(
    storage: Storage, table_root: str, dvs: Sequence[tuple[DeletionVectorDescriptor, str]]
) -> list[np.ndarray]:
    """Sorted row indexes (uint64) that each (descriptor, data file) of ``dvs`` deletes from its data file.

    Each DV file is read once, however many of the DVs it holds (delta-spark writes a
    task's DVs into one file), and the files several at a time. Raises
    ``DeletionVectorError`` naming the table, the data file and the DV file (or the
    inline DV) when a DV is missing or fails a check.
    """
    indexes: list[np.ndarray | None] = [None] * len(dvs)
    by_file: dict[str, list[tuple[int, DeletionVectorDescriptor, str]]] = {}
    for position, (descriptor, data_file) in enumerate(dvs):
        path = dv_file(table_root, descriptor, data_file)
        if path is None:
            data = inline_data(table_root, descriptor, data_file)
            with _naming(table_root, data_file, "inline"):
                indexes[position] = _checked_indexes(data, descriptor)
        else:
            by_file.setdefault(path, []).append((position, descriptor, data_file))
    with ThreadPoolExecutor(max_workers=max(1, min(_READ_THREADS, len(by_file)))) as pool:
        for read in pool.map(lambda item: _read_dv_file(storage, table_root, *item), by_file.items()):
            for position, found in read:
                indexes[position] = found
    return cast(list[np.ndarray], indexes)


def read_deletion_vector(storage: Storage, table_root: str, descriptor: DeletionVectorDescriptor, data_file: str) -> np.ndarray:
    """Sorted row indexes (uint64) that ``descriptor`` deletes from ``data_file`` (see ``read_deletion_vectors``)."""
    return read_deletion_vectors(storage, table_root, [(descriptor, data_file)])[0]

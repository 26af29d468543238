"""Delta's deletion-vector bitmap (a RoaringBitmapArray) in numpy alone, as 64-row words.

Spark's Python workers decode and encode DVs with this module, shipped by value (see the
package docstring): a Spark server has numpy, not pyroaring.

The format (PROTOCOL.md, "Deletion Vector Format"): a little-endian magic number, the
number of 32-bit buckets (uint64), then per bucket its key (uint32, the row indexes' high
half) and a 32-bit Roaring bitmap in the portable format (RoaringFormatSpec): a cookie
(12346 with the container count after it; or 12347 with the count less one in its high
half, then a bit set of the run containers), a (key, cardinality - 1) uint16 pair per
container, a uint32 offset per container (absent with cookie 12347 below 4 containers),
then the containers: an array of sorted uint16 values (cardinality up to 4096), a bitmap
of 1024 uint64 words, or a run container (a uint16 count of (start, length - 1) pairs).

Rows travel as 64-row words, ``word = row >> 6`` with bit ``row & 63`` of its mask set,
which is what readers join on and what a bitmap container is already made of: a DV
deleting a file's rows densely decodes to one word per 64 rows, never a value per row.
Everything a decoder can check is checked (sizes, ascending keys and values, the header's
cardinalities), since a DV misread means deleted rows come back.

Encoding writes array and bitmap containers only, byte for byte what pyroaring's
``BitMap64.serialize`` writes without ``run_optimize`` (and delta-spark, which never writes
run containers: readers built on older roaring libraries cannot read them).
"""

from __future__ import annotations

import struct

import numpy as np

MAGIC = 1681511377
# delta-spark's native-serialization variant, which the protocol does not define.
NATIVE_MAGIC = 1681511376
_NO_RUN_COOKIE = 12346
_RUN_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4  # with cookie 12347, fewer containers than this have no offsets
_ARRAY_MAX = 4096  # the most values an array container holds
_CONTAINER_WORDS = 1024  # 65536 rows of a container as 64-row words
_POPCOUNT = np.array([bin(byte).count("1") for byte in range(256)], np.int64)


def words_of(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row indexes (any order, repeats allowed) as ascending 64-row words (int64) and their masks (uint64)."""
    return _words_of_ascending(np.sort(np.asarray(rows, np.uint64)))


def _words_of_ascending(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``words_of`` for ascending row indexes (uint64); a repeated row just sets its bit again."""
    words = (rows >> np.uint64(6)).astype(np.int64)
    bits = np.left_shift(np.uint64(1), rows & np.uint64(63))
    if len(words) == 0:
        return words, bits
    starts = np.flatnonzero(np.r_[True, words[1:] != words[:-1]])
    return words[starts], np.bitwise_or.reduceat(bits, starts)


def rows_of(words: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The ascending row indexes (uint64) of ascending words and their masks."""
    # Bit i of byte j of a word's little-endian mask is its row 8 * j + i.
    bits = np.unpackbits(np.ascontiguousarray(masks, "<u8").view(np.uint8), bitorder="little")
    positions = np.flatnonzero(bits).astype(np.uint64)
    return (np.asarray(words, np.uint64)[positions >> np.uint64(6)] << np.uint64(6)) | (positions & np.uint64(63))


def merge_words(words: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Words in any order, repeats allowed, as ascending unique words with their masks OR-ed."""
    if len(words) == 0:
        return np.asarray(words, np.int64), np.asarray(masks, np.uint64)
    order = np.argsort(words, kind="stable")
    words, masks = words[order], masks[order]
    starts = np.flatnonzero(np.r_[True, words[1:] != words[:-1]])
    return words[starts], np.bitwise_or.reduceat(masks, starts)


def cardinality(masks: np.ndarray) -> int:
    """How many rows the masks mark."""
    return int(_POPCOUNT[np.ascontiguousarray(masks, "<u8").view(np.uint8)].sum())


def last_row(words: np.ndarray, masks: np.ndarray) -> int:
    """The highest row ascending words and their (non-zero) masks mark."""
    return int(words[-1]) * 64 + int(masks[-1]).bit_length() - 1


class _Reader:
    """Bounds-checked reads from a serialized bitmap."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def take(self, size: int) -> int:
        """The position of the next ``size`` bytes, checked to be there; moves past them."""
        start = self.position
        if size < 0 or start + size > len(self.data):
            raise ValueError(f"malformed 64-bit roaring bitmap: it ends at byte {len(self.data)}, before {start + size}")
        self.position = start + size
        return start

    def unpack(self, layout: str) -> tuple[int, ...]:
        return struct.unpack_from(layout, self.data, self.take(struct.calcsize(layout)))

    def array(self, dtype: str, count: int) -> np.ndarray:
        item = np.dtype(dtype).itemsize
        return np.frombuffer(self.data, dtype, count, self.take(item * count))


def decode(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The ascending words (int64) and masks (uint64) of a RoaringBitmapArray; ValueError if malformed."""
    reader = _Reader(data)
    if len(data) < 4:
        raise ValueError(f"{len(data)} bytes is too short for a deletion vector")
    (magic,) = reader.unpack("<I")
    if magic != MAGIC:
        native = " (delta-spark's native serialization, which the protocol does not define)" if magic == NATIVE_MAGIC else ""
        raise ValueError(f"magic number {magic}{native}, expected {MAGIC}")
    (buckets,) = reader.unpack("<Q")
    word_parts: list[np.ndarray] = []
    mask_parts: list[np.ndarray] = []
    row_parts: list[np.ndarray] = []
    previous = -1
    for _ in range(buckets):
        (key,) = reader.unpack("<I")
        if key <= previous:
            raise ValueError(f"malformed 64-bit roaring bitmap: bucket keys not ascending ({previous}, then {key})")
        # The spec keeps keys' top bit clear, so every index fits a signed 64-bit row index.
        if key >= 1 << 31:
            raise ValueError(f"row index {key << 32} does not fit a signed 64-bit integer")
        previous = key
        _decode_bucket(reader, key, word_parts, mask_parts, row_parts)
    if reader.position != len(data):
        raise ValueError(f"malformed 64-bit roaring bitmap: {len(data) - reader.position} bytes after its end")
    if row_parts:
        rows = np.concatenate(row_parts)
        if len(rows) > 1 and not (rows[1:] > rows[:-1]).all():
            raise ValueError("malformed 64-bit roaring bitmap: container values not ascending")
        words, masks = _words_of_ascending(rows)
        word_parts.append(words)
        mask_parts.append(masks)
    if not word_parts:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64)
    # Words of different containers never coincide: sorting is all the merge needs.
    words, masks = np.concatenate(word_parts), np.concatenate(mask_parts)
    order = np.argsort(words, kind="stable")
    return words[order], masks[order]


def _decode_bucket(
    reader: _Reader, key: int, word_parts: list[np.ndarray], mask_parts: list[np.ndarray], row_parts: list[np.ndarray]
) -> None:
    """One 32-bit bitmap: bitmap containers' words go straight to ``word_parts``, array and run
    containers' rows (as uint64 row indexes) to ``row_parts``."""
    (cookie,) = reader.unpack("<I")
    if cookie & 0xFFFF == _RUN_COOKIE:
        size = (cookie >> 16) + 1
        flags = reader.array("u1", (size + 7) // 8)
        runs = np.unpackbits(flags, bitorder="little")[:size].astype(bool)
    elif cookie == _NO_RUN_COOKIE:
        (size,) = reader.unpack("<I")
        runs = np.zeros(size, bool)
    else:
        raise ValueError(f"malformed 64-bit roaring bitmap: cookie {cookie}, expected {_NO_RUN_COOKIE} or {_RUN_COOKIE}")
    header = reader.array("<u2", 2 * size).reshape(size, 2).astype(np.int64)
    keys, cards = header[:, 0], header[:, 1] + 1
    if size > 1 and not (keys[1:] > keys[:-1]).all():
        raise ValueError("malformed 64-bit roaring bitmap: container keys not ascending")
    if cookie == _NO_RUN_COOKIE or size >= _NO_OFFSET_THRESHOLD:
        reader.take(4 * size)  # offsets: the containers follow each other anyway
    for low_key, card, is_run in zip(keys.tolist(), cards.tolist(), runs.tolist(), strict=True):
        base = (key << 32) | (low_key << 16)
        if is_run:
            (count,) = reader.unpack("<H")
            pairs = reader.array("<u2", 2 * count).reshape(count, 2).astype(np.int64)
            lows = _run_values(pairs, card)
            row_parts.append(lows.astype(np.uint64) | np.uint64(base))
        elif card > _ARRAY_MAX:
            block = reader.array("<u8", _CONTAINER_WORDS)
            present = np.flatnonzero(block)
            masks = block[present].astype(np.uint64)
            if cardinality(masks) != card:
                raise ValueError(
                    f"malformed 64-bit roaring bitmap: a bitmap container holds {cardinality(masks)} values, its header says {card}"
                )
            word_parts.append(present.astype(np.int64) + (base >> 6))
            mask_parts.append(masks)
        else:
            row_parts.append(reader.array("<u2", card).astype(np.uint64) | np.uint64(base))


def _run_values(pairs: np.ndarray, card: int) -> np.ndarray:
    """The values of a run container's (start, length - 1) pairs, checked against its header's cardinality."""
    starts, lengths = pairs[:, 0], pairs[:, 1] + 1
    ends = starts + lengths  # exclusive
    if len(pairs) and (ends[-1] > 1 << 16 or (len(pairs) > 1 and not (starts[1:] >= ends[:-1]).all())):
        raise ValueError("malformed 64-bit roaring bitmap: run container runs overlap or leave 16 bits")
    total = int(lengths.sum())
    if total != card:
        raise ValueError(f"malformed 64-bit roaring bitmap: a run container holds {total} values, its header says {card}")
    # Each value is its position plus the start of its run less the values before that run.
    offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return np.arange(total, dtype=np.int64) + offsets


def encode(words: np.ndarray, masks: np.ndarray) -> bytes:
    """The RoaringBitmapArray of ascending unique words (int64, row >> 6) and their non-zero masks."""
    words = np.asarray(words, np.int64)
    masks = np.ascontiguousarray(masks, np.uint64)
    if len(words) == 0:
        return struct.pack("<IQ", MAGIC, 0)
    if words[-1] >= 1 << 57:
        raise ValueError(f"row index {last_row(words, masks)} does not fit a signed 64-bit integer")
    containers = words >> 10  # the row indexes' top 48 bits
    starts = np.flatnonzero(np.r_[True, containers[1:] != containers[:-1]])
    ends = np.r_[starts[1:], len(words)].astype(np.int64)
    keys = containers[starts]
    per_word = _POPCOUNT[masks.view(np.uint8)].reshape(-1, 8).sum(axis=1)
    cards = np.add.reduceat(per_word, starts)
    arrays = cards <= _ARRAY_MAX
    # Array containers' values, all at once: rows of their words, low 16 bits.
    in_array = np.repeat(arrays, ends - starts)
    lows = (rows_of(words[in_array], masks[in_array]) & np.uint64(0xFFFF)).astype("<u2")
    array_ends = np.cumsum(np.where(arrays, cards, 0))
    buckets = keys >> 16
    bucket_starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
    chunks = [struct.pack("<IQ", MAGIC, len(bucket_starts))]
    for first, stop in zip(bucket_starts.tolist(), np.r_[bucket_starts[1:], len(keys)].tolist(), strict=True):
        size = stop - first
        header = np.empty((size, 2), "<u2")
        header[:, 0] = keys[first:stop] & 0xFFFF
        header[:, 1] = cards[first:stop] - 1
        sizes = np.where(arrays[first:stop], 2 * cards[first:stop], 8 * _CONTAINER_WORDS)
        offsets = (8 + 8 * size + np.r_[0, np.cumsum(sizes)[:-1]]).astype("<u4")
        chunks += [struct.pack("<III", int(buckets[first]), _NO_RUN_COOKIE, size), header.tobytes(), offsets.tobytes()]
        for index in range(first, stop):
            if arrays[index]:
                chunks.append(lows[array_ends[index] - cards[index] : array_ends[index]].tobytes())
            else:
                block = np.zeros(_CONTAINER_WORDS, "<u8")
                block[words[starts[index] : ends[index]] & (_CONTAINER_WORDS - 1)] = masks[starts[index] : ends[index]]
                chunks.append(block.tobytes())
    return b"".join(chunks)

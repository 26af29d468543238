"""The executors' numpy RoaringBitmapArray codec, against pyroaring's portable serialization.

pyroaring (CRoaring) is the oracle: whatever it writes (array, bitmap and run containers,
in buckets above 2^32) must decode to its values, and what the codec writes must be
pyroaring's bytes exactly whenever pyroaring writes no run container (the codec writes
none, as delta-spark). Malformed input must fail as ``ValueError`` and nothing else,
since the read path reports it naming the DV.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from pyroaring import BitMap64

from sparkdelta.spark.worker.roaring import (
    MAGIC,
    cardinality,
    decode,
    encode,
    last_row,
    merge_words,
    rows_of,
    words_of,
)

_RNG = np.random.default_rng(18)
_CONTAINER = 1 << 16


def _case(name: str) -> np.ndarray:
    """Row indexes (ascending uint64) of each kind of bitmap."""
    if name == "empty":
        return np.zeros(0, np.uint64)
    if name == "one":
        return np.array([7], np.uint64)
    if name == "wide":  # several 64-bit buckets, both sides of 2^32, up to 2^62
        return np.array([0, 3, 65_535, 65_536, 2**32 - 1, 2**32, 2**32 + 7, 5 * 2**32 + 1, 2**40, 2**62 + 9], np.uint64)
    if name == "sparse":  # array containers only
        return np.unique(_RNG.integers(0, 50_000_000, 20_000)).astype(np.uint64)
    if name == "dense":  # bitmap containers only
        return np.unique(_RNG.integers(0, 4 * _CONTAINER, 150_000)).astype(np.uint64)
    if name == "array-limit":  # 4096 values (the most an array holds) and 4097 (a bitmap)
        first = np.arange(0, 4096 * 3, 3)
        second = _CONTAINER + np.arange(0, 4097 * 2, 2)
        return np.r_[first, second].astype(np.uint64)
    if name == "runs":  # long and short runs, container edges included
        spans = [(0, 70_000), (70_002, 70_003), (131_070, 131_073), (2**33, 2**33 + 65_536), (2**33 + 100_000, 2**33 + 100_100)]
        return np.concatenate([np.arange(a, b) for a, b in spans]).astype(np.uint64)
    if name == "mixed":
        return np.unique(np.r_[_case("sparse"), _case("dense"), _case("runs"), _case("wide")]).astype(np.uint64)
    raise ValueError(name)


CASES = ["empty", "one", "wide", "sparse", "dense", "array-limit", "runs", "mixed"]


def _pyroaring(values: np.ndarray, how: str) -> bytes:
    """A RoaringBitmapArray of ``values`` as pyroaring serializes it: ``update`` writes array and
    bitmap containers; the constructor turns consecutive values into runs; ``run_optimize`` more."""
    if how == "update":
        bitmap = BitMap64()
        bitmap.update(values.tolist())
    else:
        bitmap = BitMap64(values.tolist())
        if how == "run_optimize":
            bitmap.run_optimize()
    return struct.pack("<I", MAGIC) + bitmap.serialize()


@pytest.mark.parametrize("how", ["update", "constructor", "run_optimize"])
@pytest.mark.parametrize("case", CASES)
def test_decodes_what_pyroaring_writes(case: str, how: str) -> None:
    values = _case(case)
    words, masks = decode(_pyroaring(values, how))
    assert words.dtype == np.int64 and masks.dtype == np.uint64
    assert (np.diff(words) > 0).all() and (masks != 0).all()
    assert np.array_equal(rows_of(words, masks), values)
    assert cardinality(masks) == len(values)


@pytest.mark.parametrize("case", CASES)
def test_encodes_byte_for_byte_as_pyroaring_without_runs(case: str) -> None:
    values = _case(case)
    data = encode(*words_of(values))
    assert data == _pyroaring(values, "update")
    assert list(BitMap64.deserialize(data[4:])) == values.tolist()


def test_words_gather_rows_in_any_order_and_repeated() -> None:
    values = _case("mixed")
    shuffled = np.r_[values, values[::3]]
    _RNG.shuffle(shuffled)
    words, masks = words_of(shuffled)
    assert np.array_equal(rows_of(words, masks), values)
    assert cardinality(masks) == len(values) and last_row(words, masks) == int(values[-1])
    halves = [words_of(shuffled[: len(shuffled) // 2]), words_of(shuffled[len(shuffled) // 2 :])]
    merged = merge_words(np.r_[halves[0][0], halves[1][0]], np.r_[halves[0][1], halves[1][1]])
    assert np.array_equal(merged[0], words) and np.array_equal(merged[1], masks)


def test_encoding_refuses_rows_past_signed_64_bits() -> None:
    with pytest.raises(ValueError, match="does not fit a signed 64-bit"):
        encode(*words_of(np.array([2**63 + 1], np.uint64)))


@pytest.mark.parametrize("case", ["wide", "runs", "array-limit"])
def test_every_truncation_fails_as_a_value_error(case: str) -> None:
    data = _pyroaring(_case(case), "constructor")
    step = max(1, len(data) // 400)
    for end in range(0, len(data), step):
        with pytest.raises(ValueError):
            decode(data[:end])


def test_random_corruption_fails_as_a_value_error_or_decodes() -> None:
    """A flipped byte may still make a valid bitmap (the DV's CRC-32 catches that); it must never crash otherwise."""
    data = bytearray(_pyroaring(_case("mixed"), "constructor"))
    for _ in range(300):
        broken = bytearray(data)
        position = int(_RNG.integers(4, len(broken)))
        broken[position] ^= int(_RNG.integers(1, 256))
        try:
            words, masks = decode(bytes(broken))
        except ValueError:
            continue
        assert (np.diff(words) > 0).all()


def _bucket(key: int, body: bytes) -> bytes:
    return struct.pack("<I", key) + body


def _array_bitmap(values: list[int], card: int | None = None) -> bytes:
    """A 32-bit portable bitmap of one array container (key 0), as the format spec lays it out."""
    header = struct.pack("<HH", 0, (len(values) if card is None else card) - 1)
    return struct.pack("<II", 12346, 1) + header + struct.pack("<I", 16) + struct.pack(f"<{len(values)}H", *values)


def _array(buckets: list[bytes]) -> bytes:
    return struct.pack("<IQ", MAGIC, len(buckets)) + b"".join(buckets)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x01\x02", "too short"),
        (struct.pack("<IQ", MAGIC + 7, 0), f"magic number {MAGIC + 7}"),
        (struct.pack("<IQ", MAGIC - 1, 0), "native serialization"),
        (_array([_bucket(3, _array_bitmap([1])), _bucket(3, _array_bitmap([2]))]), "bucket keys not ascending"),
        (_array([_bucket(2**31, _array_bitmap([1]))]), "does not fit a signed 64-bit"),
        (_array([_bucket(0, _array_bitmap([5, 5]))]), "values not ascending"),
        (_array([_bucket(0, _array_bitmap([1, 2], card=3))]), "ends at byte"),
        (_array([_bucket(0, struct.pack("<II", 99, 0))]), "cookie 99"),
        (_array([_bucket(0, _array_bitmap([1]))]) + b"\x00", "1 bytes after its end"),
        # A bitmap container (cardinality above 4096) whose words hold fewer values than its header says.
        (
            _array([_bucket(0, struct.pack("<IIHHI", 12346, 1, 0, 4999, 16) + bytes(8192))]),
            "holds 0 values, its header says 5000",
        ),
        # A run container (cookie 12347, one container, run flag set) with overlapping runs.
        (_array([_bucket(0, struct.pack("<IBHHHHHHH", 12347, 1, 0, 9, 2, 0, 5, 3, 3))]), "runs overlap"),
    ],
    ids=[
        "short",
        "magic",
        "native-magic",
        "keys",
        "top-bit",
        "array-order",
        "truncated",
        "cookie",
        "trailing",
        "bitmap-card",
        "run-overlap",
    ],
)
def test_malformed_bitmaps_are_refused(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decode(data)

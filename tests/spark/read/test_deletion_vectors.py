"""Deletion vectors: the kernel's decoder, and Spark reads that drop deleted rows.

The decoder is checked against bitmaps built here with pyroaring and framed as the spec
says (inline Z85 and on-disk files holding several DVs), against published test vectors
(ZeroMQ's Z85 example, the spec's path example, delta-kernel-rs's inline DV) and against
a DV file delta-spark wrote; every check it makes (version, size, checksum, magic,
cardinality) must reject a DV that breaks it. Spark reads are checked on a table built
here whose rows are their own row index, so the expected rows are known exactly, with
row-group skipping and file splits that make Spark's row index work for its living.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import uuid
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from oracles import conformance_root
from plans import physical_plan
from pyroaring import BitMap64
from pyspark.sql import functions as F

from sparkdelta.exceptions import InvalidLogError
from sparkdelta.kernel import Table
from sparkdelta.kernel.deletion_vectors import (
    MAGIC,
    DeletionVectorDescriptor,
    DeletionVectorError,
    decode_bitmap_array,
    read_deletion_vector,
    read_deletion_vectors,
    z85_decode,
)
from sparkdelta.kernel.storage import LocalStorage
from sparkdelta.spark.read.deletion_vectors import broadcast_threshold
from sparkdelta.spark.read.parquet import read_snapshot
from sparkdelta.tables import DeltaTable

_B85_TO_Z85 = bytes.maketrans(
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~",
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#",
)
# Row indexes on both sides of the 32-bit boundary, in several 64-bit buckets.
WIDE_INDEXES = [0, 3, 65_535, 65_536, 2**32 - 1, 2**32, 2**32 + 7, 5 * 2**32 + 1, 2**40, 2**62 + 9]


# ---------------------------------------------------------------------------------------
# Writing DVs the way the spec describes them.


def z85_encode(data: bytes) -> str:
    """Z85 of ``data`` zero-padded to whole 4-byte groups, as Delta stores inline DVs."""
    return base64.b85encode(data + b"\0" * (-len(data) % 4)).translate(_B85_TO_Z85).decode()


def bitmap_array(indexes: list[int]) -> bytes:
    """A RoaringBitmapArray: little-endian magic, then pyroaring's portable 64-bit bitmap."""
    return struct.pack("<I", MAGIC) + BitMap64(indexes).serialize()


def framed(data: bytes, crc: int | None = None) -> bytes:
    """One DV in a DV file: big-endian size, the data, big-endian CRC-32 of the data."""
    return struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data) if crc is None else crc)


def write_dv_file(path: Path, blocks: list[bytes]) -> list[int]:
    """A DV file (version byte, then ``blocks``); the offset of each block."""
    content, offsets = b"\x01", []
    for block in blocks:
        offsets.append(len(content))
        content += block
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return offsets


def descriptor(storage_type: str, where: str, size: int, cardinality: int, offset: int | None = None) -> dict[str, Any]:
    raw = {"storageType": storage_type, "pathOrInlineDv": where, "sizeInBytes": size, "cardinality": cardinality}
    return raw if offset is None else {**raw, "offset": offset}


def read(root: Path | str, raw: dict[str, Any], storage: Any = None) -> list[int]:
    dv = DeletionVectorDescriptor.from_dict(raw)
    return read_deletion_vector(storage or LocalStorage(), str(root), dv, "part-0.parquet").tolist()


class MemoryStorage(LocalStorage):
    """A store without local paths: DVs are read whole through ``read``."""

    def local_path(self, path: str) -> str | None:
        return None


# ---------------------------------------------------------------------------------------
# Z85 and DV paths.


def test_z85_matches_the_zeromq_spec_and_round_trips() -> None:
    assert z85_decode("HelloWorld") == bytes.fromhex("864FD26FB559F75B")  # ZeroMQ RFC 32's example
    data = bytes(range(256)) * 3
    assert z85_decode(z85_encode(data)) == data


# Wrong length; "_" and "~" are base85 digits but not Z85 ones; not ASCII.
@pytest.mark.parametrize("text", ["HelloWorl", "Hello_orld", "Hell~", "Hell\u00e9"])
def test_z85_refuses_text_outside_its_alphabet_or_length(text: str) -> None:
    with pytest.raises(ValueError, match="not Z85"):
        z85_decode(text)


def test_relative_dv_paths_come_from_a_z85_uuid_and_an_optional_prefix() -> None:
    # The spec's "JSON Example 1", and a DV id of delta-kernel-rs's tests.
    with_prefix = DeletionVectorDescriptor.from_dict(descriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 40, 6, 4))
    assert with_prefix.absolute_path("/t") == "/t/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    plain = DeletionVectorDescriptor.from_dict(descriptor("u", "vBn[lx{q8@P<9BNH/isA", 36, 2, 1))
    assert plain.absolute_path("/t") == "/t/deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"
    made = uuid.uuid4()
    assert DeletionVectorDescriptor("u", "xyz" + z85_encode(made.bytes), 1, 4, 0).absolute_path("/t") == (
        f"/t/xyz/deletion_vector_{made}.bin"
    )


def test_absolute_and_inline_dv_locations() -> None:
    encoded = DeletionVectorDescriptor("p", "file:/data/my%20table/dv.bin", 1, 4, 0)
    assert encoded.absolute_path("/t") == "/data/my table/dv.bin"
    assert DeletionVectorDescriptor("p", "s3://b/t/dv.bin", 1, 4, 0).absolute_path("/t") == "s3://b/t/dv.bin"
    assert DeletionVectorDescriptor("i", z85_encode(bitmap_array([])), None, 12, 0).absolute_path("/t") is None
    with pytest.raises(ValueError, match="storage type 'x'"):
        DeletionVectorDescriptor("x", "", 1, 4, 0).absolute_path("/t")
    with pytest.raises(ValueError, match="shorter than a Z85 UUID"):
        DeletionVectorDescriptor("u", "abc", 1, 4, 0).absolute_path("/t")


# ---------------------------------------------------------------------------------------
# Decoding.


def test_inline_dv_from_delta_kernel_rs() -> None:
    raw = descriptor("i", "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 44, 6)
    assert read("/unused", raw) == [3, 4, 7, 11, 18, 29]


@pytest.mark.parametrize("indexes", [[], [5], list(range(0, 70_000, 3)), WIDE_INDEXES], ids=["empty", "one", "dense", "wide"])
def test_inline_dvs_built_with_pyroaring(indexes: list[int]) -> None:
    data = bitmap_array(indexes)
    assert read("/unused", descriptor("i", z85_encode(data), len(data), len(indexes))) == indexes


def test_a_run_optimized_bitmap_decodes() -> None:
    bitmap = BitMap64(range(1000, 200_000))
    bitmap.run_optimize()
    data = struct.pack("<I", MAGIC) + bitmap.serialize()
    assert decode_bitmap_array(data) == bitmap


@pytest.mark.parametrize("storage", [LocalStorage(), MemoryStorage()], ids=["seek", "whole-file"])
def test_dvs_at_their_offsets_in_a_shared_dv_file(tmp_path: Path, storage: Any) -> None:
    first, second = [1, 2, 3], WIDE_INDEXES
    name = uuid.uuid4()
    blocks = [framed(bitmap_array(first)), framed(bitmap_array(second))]
    offsets = write_dv_file(tmp_path / "p1" / f"deletion_vector_{name}.bin", blocks)
    where = "p1" + z85_encode(name.bytes)
    assert read(tmp_path, descriptor("u", where, len(blocks[0]) - 8, 3, offsets[0]), storage) == first
    assert read(tmp_path, descriptor("u", where, len(blocks[1]) - 8, len(second), offsets[1]), storage) == second
    absolute = f"file:{tmp_path}/p1/deletion_vector_{name}.bin"
    assert read("/elsewhere", descriptor("p", absolute, len(blocks[1]) - 8, len(second), offsets[1]), storage) == second


class CountingStorage(MemoryStorage):
    """A store without local paths that counts whole-file reads."""

    def __init__(self) -> None:
        self.reads: list[str] = []

    def read(self, path: str) -> bytes:
        self.reads.append(path)
        return super().read(path)


def test_each_dv_file_is_read_once_for_all_its_dvs(tmp_path: Path) -> None:
    first, second = [1, 2, 3], WIDE_INDEXES
    names = [uuid.uuid4(), uuid.uuid4()]
    blocks = [framed(bitmap_array(first)), framed(bitmap_array(second))]
    offsets = [write_dv_file(tmp_path / f"deletion_vector_{name}.bin", blocks) for name in names]
    inline = bitmap_array([9])
    dvs = [
        (DeletionVectorDescriptor.from_dict(descriptor("u", z85_encode(name.bytes), len(block) - 8, len(rows), offset)), f"f{i}")
        for i, (name, block, rows, offset) in enumerate(
            [
                (names[0], blocks[0], first, offsets[0][0]),
                (names[1], blocks[1], second, offsets[1][1]),
                (names[0], blocks[1], second, offsets[0][1]),
            ]
        )
    ]
    dvs.append((DeletionVectorDescriptor.from_dict(descriptor("i", z85_encode(inline), len(inline), 1)), "f3"))
    storage = CountingStorage()
    found = read_deletion_vectors(storage, str(tmp_path), dvs)
    assert [rows.tolist() for rows in found] == [first, second, second, [9]]
    assert sorted(storage.reads) == sorted(f"{tmp_path}/deletion_vector_{name}.bin" for name in names)


def test_a_dv_file_delta_spark_wrote() -> None:
    # log-replay-dv-key-cases v3: DELETEs of id 0, 7 and 14 on a file whose row i holds id i.
    root = conformance_root() / "tables" / "log-replay-dv-key-cases"
    assert read(root, descriptor("u", "^jP?.<zvDfIGb{C.FPij", 38, 3, 1)) == [0, 7, 14]


def test_row_indexes_come_back_as_uint64() -> None:
    data = bitmap_array(WIDE_INDEXES)
    dv = DeletionVectorDescriptor("i", z85_encode(data), None, len(data), len(WIDE_INDEXES))
    indexes = read_deletion_vector(LocalStorage(), "/t", dv, "f.parquet")
    assert indexes.dtype == np.uint64 and indexes.tolist() == WIDE_INDEXES


# ---------------------------------------------------------------------------------------
# Corruption: each check must reject the DV that breaks it, naming table, data file and DV.


def _corrupt_file_case(tmp_path: Path, case: str) -> tuple[dict[str, Any], str]:
    """A DV file broken as ``case`` says, its descriptor, and the error expected."""
    data = bitmap_array([1, 5, 9])
    size, crc, cardinality, offset = len(data), None, 3, 1
    block_data = data
    if case == "checksum":
        block_data = data[:-1] + bytes([data[-1] ^ 1])
        crc = zlib.crc32(data)
    elif case == "magic":
        block_data = struct.pack("<I", MAGIC + 7) + data[4:]
    elif case == "native magic":
        block_data = struct.pack("<I", MAGIC - 1) + data[4:]
    elif case == "malformed bitmap":
        block_data = data[:4] + b"\x05" + data[5:]
    elif case == "size":
        size -= 1
    elif case == "cardinality":
        cardinality = 4
    elif case == "truncated":
        offset = 2
    elif case == "offset":
        offset = 0
    content = framed(block_data, crc)
    name = uuid.uuid4()
    path = tmp_path / f"deletion_vector_{name}.bin"
    write_dv_file(path, [content])
    if case == "version":
        path.write_bytes(b"\x02" + path.read_bytes()[1:])
    expected = {
        "checksum": "checksum mismatch",
        "magic": f"magic number {MAGIC + 7}",
        "native magic": "native serialization",
        "malformed bitmap": "malformed 64-bit roaring bitmap",
        "size": f"the log says {size}",
        "cardinality": "cardinality is 4",
        "truncated": "file ends",
        "offset": "cannot frame a DV",
        "version": "file format version 02",
    }[case]
    return descriptor("u", z85_encode(name.bytes), size, cardinality, offset), expected


CORRUPTIONS = ["checksum", "magic", "native magic", "malformed bitmap", "size", "cardinality", "truncated", "offset", "version"]


@pytest.mark.parametrize("case", CORRUPTIONS)
def test_a_corrupt_dv_file_is_refused_by_name(tmp_path: Path, case: str) -> None:
    raw, expected = _corrupt_file_case(tmp_path, case)
    dv_file = DeletionVectorDescriptor.from_dict(raw).absolute_path(str(tmp_path))
    with pytest.raises(DeletionVectorError, match=expected) as raised:
        read(tmp_path, raw)
    message = str(raised.value)
    assert str(tmp_path) in message and "part-0.parquet" in message and str(dv_file) in message
    assert isinstance(raised.value, InvalidLogError)


def test_the_corruption_cases_are_valid_when_left_whole(tmp_path: Path) -> None:
    """Each corruption above breaks exactly one thing: unbroken, the same DV reads."""
    data = bitmap_array([1, 5, 9])
    name = uuid.uuid4()
    write_dv_file(tmp_path / f"deletion_vector_{name}.bin", [framed(data)])
    assert read(tmp_path, descriptor("u", z85_encode(name.bytes), len(data), 3, 1)) == [1, 5, 9]


@pytest.mark.parametrize("missing", ["storageType", "sizeInBytes", "cardinality"])
def test_a_descriptor_missing_a_field_is_refused(missing: str) -> None:
    raw = {k: v for k, v in descriptor("u", "vBn[lx{q8@P<9BNH/isA", 36, 2, 1).items() if k != missing}
    with pytest.raises(DeletionVectorError, match=f"malformed deletionVector descriptor.*: no {missing}"):
        DeletionVectorDescriptor.from_dict(raw)
    with pytest.raises(DeletionVectorError, match=f"malformed deletionVector descriptor.*: no {missing}"):
        DeletionVectorDescriptor.from_dict({**raw, missing: None})


def test_a_missing_dv_file_is_refused_by_name(tmp_path: Path) -> None:
    raw = descriptor("u", z85_encode(uuid.uuid4().bytes), 20, 1, 1)
    with pytest.raises(DeletionVectorError, match="No such file"):
        read(tmp_path, raw)


def test_inline_dv_size_and_cardinality_checks() -> None:
    data = bitmap_array([2, 4])
    with pytest.raises(DeletionVectorError, match="inline DV decodes to"):
        read("/t", descriptor("i", z85_encode(data), len(data) + 4, 2))
    with pytest.raises(DeletionVectorError, match="cardinality is 3"):
        read("/t", descriptor("i", z85_encode(data), len(data), 3))
    too_big = struct.pack("<I", MAGIC) + BitMap64([2**63 + 1]).serialize()
    with pytest.raises(DeletionVectorError, match="does not fit a signed 64-bit"):
        read("/t", descriptor("i", z85_encode(too_big), len(too_big), 1))


# ---------------------------------------------------------------------------------------
# Spark: a table whose rows hold their own row index.

ROWS_PER_FILE = 10_000


def _write_dv_table(root: Path, corrupt: bool = False) -> set[int]:
    """Four files of ``id`` = file * 10000 + row index (10 row groups each); the live ids.

    File 0 has a relative DV with a prefix, file 1 an absolute-path one in the same DV
    file, file 2 an inline one, and file 3 none.
    """
    (root / "_delta_log").mkdir(parents=True)
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    actions: list[dict] = [
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": ["deletionVectors"],
                "writerFeatures": ["deletionVectors"],
            }
        },
        {
            "metaData": {
                "id": "dv-test",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {"delta.enableDeletionVectors": "true"},
                "createdTime": 0,
            }
        },
    ]
    deleted = [
        [i for i in range(ROWS_PER_FILE) if i % 7 == 0],
        [0, 1, 4_999, 5_000, 9_999],
        list(range(3_000, 6_000)),
        [],
    ]
    name = uuid.uuid4()
    blocks = [framed(bitmap_array(d)) for d in deleted[:2]]
    if corrupt:
        blocks[1] = blocks[1][:-1] + bytes([blocks[1][-1] ^ 1])
    offsets = write_dv_file(root / "dv" / f"deletion_vector_{name}.bin", blocks)
    inline = bitmap_array(deleted[2])
    dvs = [
        descriptor("u", "dv" + z85_encode(name.bytes), len(blocks[0]) - 8, len(deleted[0]), offsets[0]),
        descriptor("p", f"file:{root}/dv/deletion_vector_{name}.bin", len(blocks[1]) - 8, len(deleted[1]), offsets[1]),
        descriptor("i", z85_encode(inline), len(inline), len(deleted[2])),
        None,
    ]
    live = set()
    for number, dv in enumerate(dvs):
        ids = np.arange(ROWS_PER_FILE, dtype=np.int64) + number * ROWS_PER_FILE
        path = root / f"part-{number}.parquet"
        pq.write_table(pa.table({"id": ids}), path, row_group_size=ROWS_PER_FILE // 10)
        stats = {"numRecords": ROWS_PER_FILE, "minValues": {"id": int(ids[0])}, "maxValues": {"id": int(ids[-1])}}
        add = {"path": path.name, "partitionValues": {}, "size": path.stat().st_size, "modificationTime": 0}
        add |= {"dataChange": True, "stats": json.dumps({**stats, "tightBounds": dv is None})}
        actions.append({"add": add if dv is None else {**add, "deletionVector": dv}})
        live |= set(ids.tolist()) - {number * ROWS_PER_FILE + i for i in deleted[number]}
    (root / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return live


def _ids(frame: Any) -> list[int]:
    return sorted(frame.toArrow().column("id").to_pylist())


def _plan(frame: Any) -> str:
    """The physical plan: before the frame runs, the initial one only (adaptive execution adds the final one)."""
    return physical_plan(frame)


def test_spark_drops_exactly_the_deleted_rows(spark: Any, tmp_path: Path) -> None:
    live = _write_dv_table(tmp_path / "t")
    frame = read_snapshot(spark, Table(str(tmp_path / "t")).snapshot())
    # One scan of the files with and without a DV (a union would lose ``_metadata``); the DV file is read once.
    plan = _plan(frame)
    assert sum("FileScan binaryFile" in line for line in plan.splitlines()) == 1
    scans = [line for line in plan.splitlines() if "FileScan parquet" in line]
    assert len(scans) == 1 and "row_index" in scans[0]
    assert _ids(frame) == sorted(live)
    assert len(live) == 4 * ROWS_PER_FILE - (1429 + 5 + 3000)


def test_row_indexes_hold_across_row_group_skipping_and_file_splits(spark: Any, tmp_path: Path) -> None:
    """Row-group skipping (the filter) and split files (tiny partitions) keep row indexes file-wide."""
    live = _write_dv_table(tmp_path / "t")
    previous = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "8k")
    try:
        ranges = " OR ".join(f"id BETWEEN {n * 10_000 + 4_500} AND {n * 10_000 + 9_999}" for n in range(3))
        frame = spark.read.format("delta").load(str(tmp_path / "t")).where(ranges)
        assert frame.select(F.spark_partition_id().alias("p")).distinct().count() > 4
        assert _ids(frame) == sorted(i for i in live if i % 10_000 >= 4_500 and i < 30_000)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", previous)


def test_pruned_scans_apply_the_dvs_of_the_files_they_keep(spark: Any, tmp_path: Path) -> None:
    live = _write_dv_table(tmp_path / "t")
    snapshot = Table(str(tmp_path / "t")).snapshot()
    # Data skipping keeps files 1 and 2 only: one with a file DV, one inline.
    frame = spark.read.format("delta").load(str(tmp_path / "t")).where("id >= 10000 AND id < 30000")
    assert _ids(frame) == sorted(i for i in live if 10_000 <= i < 30_000)
    kept = snapshot.scan().files.filter(pa.array([p in ("part-2.parquet", "part-3.parquet") for p in snapshot.file_paths()]))
    assert _ids(read_snapshot(spark, snapshot, kept)) == sorted(i for i in live if i >= 20_000)
    with pytest.raises(ValueError, match="deletionVector"):
        read_snapshot(spark, snapshot, kept.drop_columns(["deletionVector"]))


def test_large_dvs_use_a_sort_merge_join_with_the_same_rows(spark: Any, tmp_path: Path) -> None:
    live = _write_dv_table(tmp_path / "t")
    previous = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        frame = read_snapshot(spark, Table(str(tmp_path / "t")).snapshot())
        assert "SortMergeJoin" in _plan(frame) and "LeftOuter" in _plan(frame)
        assert _ids(frame) == sorted(live)
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", previous)


def test_the_broadcast_threshold_is_read_in_bytes(spark: Any) -> None:
    previous = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    try:
        for value, expected in [("10485760b", 10 << 20), ("20MB", 20 << 20), ("1g", 1 << 30), ("-1", -1), ("512", 512)]:
            spark.conf.set("spark.sql.autoBroadcastJoinThreshold", value)
            assert broadcast_threshold(spark) == expected, value
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", previous)


def test_a_corrupt_dv_fails_the_read_naming_it(spark: Any, tmp_path: Path) -> None:
    _write_dv_table(tmp_path / "t", corrupt=True)
    frame = read_snapshot(spark, Table(str(tmp_path / "t")).snapshot())
    with pytest.raises(Exception, match="checksum mismatch") as raised:
        frame.collect()
    assert "part-1.parquet" in str(raised.value) and "deletion_vector_" in str(raised.value)


def test_a_dv_file_spelled_differently_fails_loudly_instead_of_keeping_deleted_rows(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sparkdelta.spark.read.parquet as read_module

    _write_dv_table(tmp_path / "t")
    spelled = read_module.spark_file_uris
    monkeypatch.setattr(read_module, "spark_file_uris", lambda root, paths: ["file:/nowhere" + p for p in spelled(root, paths)])
    with pytest.raises(Exception, match="matches no file with a deletion vector"):
        read_snapshot(spark, Table(str(tmp_path / "t")).snapshot()).collect()


def test_a_dv_file_spelled_differently_fails_loudly_instead_of_dropping_its_dvs(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sparkdelta.spark.read.deletion_vectors as dv_module

    _write_dv_table(tmp_path / "t")
    spelled = dv_module.spark_file_uri
    monkeypatch.setattr(dv_module, "spark_file_uri", lambda location: "file:/nowhere" + spelled(location))
    with pytest.raises(Exception, match="matches no deletion vector file of"):
        read_snapshot(spark, Table(str(tmp_path / "t")).snapshot()).collect()


def test_a_dv_file_whose_logged_size_is_wrong_still_loses_its_deleted_rows(spark: Any, tmp_path: Path) -> None:
    """Rows of files without a DV skip the DV joins by their size; a DV file of another size
    than the log says must not be taken for one of them."""
    path = str(tmp_path / "t")
    spark.range(0, 50, 1, 2).write.format("delta").option("delta.enableDeletionVectors", "true").save(path)
    spark.range(50, 60, 1, 1).write.format("delta").mode("append").save(path)
    DeltaTable.forPath(spark, path).delete("id = 3")
    commit = Path(path, "_delta_log", f"{2:020d}.json")
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:
        if "add" in action and action["add"].get("deletionVector"):
            action["add"]["size"] += 1
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    commit.with_suffix(".crc").unlink()  # its table size no longer agrees
    frame = read_snapshot(spark, Table(path).snapshot())
    assert _ids(frame) == [i for i in range(60) if i != 3]


def test_tables_without_dvs_read_without_row_indexes_or_joins(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "plain"
    os.makedirs(root / "_delta_log")
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), root / "a.parquet")
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "p", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(schema)}},
        {"add": {"path": "a.parquet", "partitionValues": {}, "size": 1, "modificationTime": 0, "dataChange": True}},
    ]
    (root / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    frame = read_snapshot(spark, Table(str(root)).snapshot())
    plan = _plan(frame)
    assert "Join" not in plan and "row_index" not in plan
    assert _ids(frame) == [1, 2]


def test_a_conformance_dv_table_with_a_filter_and_column_pruning(spark: Any) -> None:
    # DeletionVectorSuite: rows (x % 10, x, "foo{x % 5}") for x < 50, less even col1 below 30.
    path = str(conformance_root() / "tables" / "dv-with-columnmapping")
    frame = spark.read.format("delta").load(path).where("col1 >= 10").select("col1", "part")
    expected = sorted((x, x % 10) for x in range(10, 50) if not (x % 2 == 0 and x < 30))
    assert sorted((r.col1, r.part) for r in frame.collect()) == expected
    plan = _plan(frame)
    assert "LeftOuter" in plan and "row_index" in plan
    assert "col-ae46e8ed" not in plan, "col2 (physical col-ae46e8ed-...) is pruned from the scan"

"""The executors' DV functions: what they compute, and that they run where sparkdelta is not installed.

``mapInArrow`` ships them with pyspark's cloudpickle; here they are pickled the same way
and run in a Python process whose imports of ``sparkdelta`` fail, as on a Spark server
with nothing of sparkdelta on it (``tests/connect_server.py`` blocks them the same way).
"""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap64
from pyspark import cloudpickle

from sparkdelta.kernel.deletion_vectors import decode_bitmap_array
from sparkdelta.spark.worker.deletion_vectors import (
    CONTENT,
    DELETED_FILE_ID,
    DELETED_WORD,
    DV,
    DV_FILE,
    DV_KEY,
    ENTRIES,
    ENTRY,
    LAST_ROW,
    MASK,
    PATH,
    ROWS,
    deleted_rows_by_file,
    expand_deletion_vectors,
    expand_read_deletion_vectors,
)
from sparkdelta.spark.worker.roaring import MAGIC

_BLOCKED = """
import importlib.abc, pickle, sys

class NoSparkdelta(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "sparkdelta" or name.startswith("sparkdelta."):
            raise ImportError(f"{name}: not installed here")

sys.meta_path.insert(0, NoSparkdelta())
function, batches = pickle.loads(sys.stdin.buffer.read())
sys.stdout.buffer.write(pickle.dumps([b for b in function(iter(batches))]))
"""


def _run_without_sparkdelta(function: object, batches: list[pa.RecordBatch], tmp_path: Path) -> list[pa.RecordBatch]:
    """``function`` over ``batches``, pickled as Spark pickles it and run where sparkdelta cannot be imported."""
    payload = cloudpickle.dumps((function, batches))
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKED], input=payload, capture_output=True, check=False, cwd=tmp_path, env={"PATH": ""}
    )
    assert done.returncode == 0, done.stderr.decode()
    return cloudpickle.loads(done.stdout)  # type: ignore[no-any-return]


def _bitmap_array(rows: list[int]) -> bytes:
    return struct.pack("<I", MAGIC) + BitMap64(rows).serialize()


def _framed(data: bytes, crc: int | None = None) -> bytes:
    return struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data) if crc is None else crc)


def _entry(file_id: int, offset: int | None, data: bytes, rows: list[int]) -> dict[str, object]:
    return {
        "file_id": file_id,
        "data_file": f"part-{file_id}.parquet",
        "offset": offset,
        "size": len(data),
        "cardinality": len(rows),
    }


def _sources(first: list[int], second: list[int], inline: list[int], crc: int | None = None) -> pa.RecordBatch:
    """A DV file holding two DVs (files 0 and 1), and an inline DV (file 2)."""
    blocks = [_framed(_bitmap_array(first), crc), _framed(_bitmap_array(second))]
    content = b"\x01" + b"".join(blocks)
    entries = [
        [_entry(0, 1, _bitmap_array(first), first), _entry(1, 1 + len(blocks[0]), _bitmap_array(second), second)],
        [_entry(2, None, _bitmap_array(inline), inline)],
    ]
    return pa.RecordBatch.from_pydict(
        {DV_FILE: ["/t/deletion_vector_x.bin", None], CONTENT: [content, _bitmap_array(inline)], ENTRIES: entries},
        schema=pa.schema([(DV_FILE, pa.string()), (CONTENT, pa.binary()), (ENTRIES, pa.list_(ENTRY))]),
    )


def _deleted_rows(batches: list[pa.RecordBatch]) -> dict[int, list[int]]:
    """File number -> deleted rows, from (file, word, mask) batches."""
    table = pa.Table.from_batches(batches)
    deleted: dict[int, list[int]] = {}
    columns = [table.column(name).to_pylist() for name in (DELETED_FILE_ID, DELETED_WORD, MASK)]
    for file_id, word, mask in zip(*columns, strict=True):
        bits = mask & (2**64 - 1)
        deleted.setdefault(file_id, []).extend(word * 64 + bit for bit in range(64) if bits >> bit & 1)
    return {file_id: sorted(rows) for file_id, rows in deleted.items()}


WIDE = [0, 63, 64, 65_535, 65_536, 2**32 + 5, 2**40]


def test_dvs_expand_to_their_rows_where_sparkdelta_is_not_installed(tmp_path: Path) -> None:
    dense = list(range(0, 300_000, 2))
    batches = _run_without_sparkdelta(partial(expand_deletion_vectors, "/t"), [_sources(dense, WIDE, [3, 4])], tmp_path)
    assert _deleted_rows(batches) == {0: dense, 1: WIDE, 2: [3, 4]}


def _keyed(sources: pa.RecordBatch) -> tuple[pa.RecordBatch, pa.Table]:
    """``_sources`` as the read path ships them: (key, bytes) rows, and the lookup of each key's DV file and entries."""
    keys = ["file:/t/deletion_vector_x.bin", " inline deletion vector 0"]
    rows = pa.RecordBatch.from_arrays([pa.array(keys), sources.column(CONTENT)], names=[DV_KEY, CONTENT])
    lookup = pa.table(
        {DV_KEY: keys[::-1], DV_FILE: sources.column(DV_FILE).to_pylist()[::-1], ENTRIES: sources.column(ENTRIES)[::-1]}
    )
    return rows, lookup


def test_read_dvs_find_their_entries_in_the_shipped_lookup_where_sparkdelta_is_not_installed(tmp_path: Path) -> None:
    rows, lookup = _keyed(_sources(list(range(0, 1000, 3)), WIDE, [3, 4]))
    function = partial(expand_read_deletion_vectors, "/t", lookup, "which matches no deletion vector file of /t version 3")
    batches = _run_without_sparkdelta(function, [rows], tmp_path)
    assert _deleted_rows(batches) == {0: list(range(0, 1000, 3)), 1: WIDE, 2: [3, 4]}


def test_a_read_dv_file_the_lookup_lacks_fails_naming_it_and_the_table() -> None:
    rows, lookup = _keyed(_sources([1], WIDE, [3]))
    respelled = rows.set_column(0, DV_KEY, pa.array(["file:/elsewhere/deletion_vector_x.bin", " inline deletion vector 0"]))
    unmatched = "which matches no deletion vector file of /t version 3"
    with pytest.raises(ValueError, match=f"file:/elsewhere/deletion_vector_x.bin, {unmatched}"):
        list(expand_read_deletion_vectors("/t", lookup, unmatched, iter([respelled])))


def test_a_corrupt_dv_fails_naming_the_table_the_data_file_and_the_dv_file() -> None:
    with pytest.raises(ValueError, match="checksum mismatch") as raised:
        list(expand_deletion_vectors("/t", iter([_sources([1, 2], WIDE, [3], crc=7)])))
    assert "/t: deletion vector of data file part-0.parquet (in /t/deletion_vector_x.bin at offset 1)" in str(raised.value)


def test_a_dv_whose_cardinality_differs_from_the_log_fails() -> None:
    sources = _sources([1, 2], WIDE, [3])
    entries = sources.column(ENTRIES).to_pylist()
    entries[1][0]["cardinality"] = 2
    broken = sources.set_column(2, ENTRIES, pa.array(entries, pa.list_(ENTRY)))
    with pytest.raises(ValueError, match="part-2.parquet \\(inline\\).*cardinality is 2"):
        list(expand_deletion_vectors("/t", iter([broken])))


def _pairs(paths: list[str], rows: list[int]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(paths, pa.string()), pa.array(rows, pa.int64())], names=["path", "row"])


def test_deleted_rows_are_gathered_per_file_where_sparkdelta_is_not_installed(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    expected: dict[str, set[int]] = {"a": set(), "b": set()}
    batches = []
    for _ in range(4):  # a file's rows spread over batches, some named twice
        paths = rng.choice(["a", "b"], 5_000).tolist()
        rows = rng.integers(0, 2**33, 5_000).tolist()
        batches.append(_pairs(paths + paths[:100], rows + rows[:100]))
        for path, row in zip(paths, rows, strict=True):
            expected[path].add(row)
    (result,) = _run_without_sparkdelta(deleted_rows_by_file, batches, tmp_path)
    for path, count, last, data in zip(*[result.column(name).to_pylist() for name in (PATH, ROWS, LAST_ROW, DV)], strict=True):
        assert list(decode_bitmap_array(data)) == sorted(expected[path])
        assert count == len(expected[path]) and last == max(expected[path])


def test_no_rows_give_no_files() -> None:
    assert list(deleted_rows_by_file(iter([_pairs([], [])]))) == []


def _batches(*batches: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    yield from batches


def test_a_row_without_a_file_or_index_is_refused() -> None:
    batch = pa.RecordBatch.from_arrays([pa.array(["a", None]), pa.array([1, 2], pa.int64())], names=["path", "row"])
    with pytest.raises(ValueError, match="no data file or no row index"):
        list(deleted_rows_by_file(_batches(batch)))

"""Issue 12, "never lose committed data": the log's odd corners must not lose or hide rows.

* stats spelling NaN and infinities as delta-spark does (``"NaN"``, ``"Infinity"``) parse,
  and data skipping never drops a file that may hold a matching row (Spark orders NaN
  above every double, and NaN = NaN);
* a checkpoint whose bytes are damaged (footer intact) is replaced by the previous
  checkpoint or the JSON commits, with a warning naming it;
* a malformed commit line is an error naming the table, version and file, and no write
  commits on top of it.
"""

from __future__ import annotations

import json
import math
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kernel_helpers import add, commit_path, commit_versions, create_table, remove, write_data_file
from oracles import delta_rs_files

from sparkdelta.exceptions import InvalidLogError, StorageError
from sparkdelta.kernel import Table
from sparkdelta.kernel import skipping as S
from sparkdelta.kernel.schema import parse_schema
from sparkdelta.kernel.snapshot import clear_log_cache
from sparkdelta.kernel.stats_schema import parsed_stats, stats_leaves
from sparkdelta.kernel.storage import LocalStorage

NAN = float("nan")
INF = float("inf")

# --------------------------------------------------------------------------- oracle: Spark's NaN semantics


def _order(value: float) -> tuple[int, float]:
    """Spark's total order on doubles: NaN above +Infinity, and equal to itself."""
    return (1, 0.0) if math.isnan(value) else (0, value)


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: a == b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def spark_compare(op: str, value: float | None, literal: float) -> bool | None:
    """``value <op> literal`` as Spark SQL evaluates it (None is SQL NULL)."""
    if value is None:
        return None
    return _OPS[op](_order(value), _order(literal))


def spark_not(result: bool | None) -> bool | None:
    return None if result is None else not result


# --------------------------------------------------------------------------- 4. NaN and infinity stats

DOUBLE_AND_STRING = parse_schema(
    '{"type":"struct","fields":[{"name":"x","type":"double","nullable":true,"metadata":{}},'
    '{"name":"s","type":"string","nullable":true,"metadata":{}}]}'
)


def _stats(rows: int, x: tuple[str, str], s: tuple[str, str], x_nulls: int = 0) -> str:
    """Stats JSON with the bounds of ``x`` spelled verbatim (``1.0``, ``"NaN"``, bare ``NaN``)."""
    low, high = f'"x":{x[0]},"s":"{s[0]}"', f'"x":{x[1]},"s":"{s[1]}"'
    counts = f'"x":{x_nulls},"s":0'
    return f'{{"numRecords":{rows},"minValues":{{{low}}},"maxValues":{{{high}}},"nullCount":{{{counts}}}}}'


# (x values, s values, stats): stats spelled as writers spell them.
NAN_FILES: list[tuple[list[float | None], list[str], str]] = [
    # delta-spark: Spark's max puts NaN on top, and Jackson quotes the non-finite numbers.
    ([1.0, NAN], ["NaN", "b"], _stats(2, ("1.0", '"NaN"'), ("NaN", "b"))),
    ([NAN, NAN], ["a", "a"], _stats(2, ('"NaN"', '"NaN"'), ("a", "a"))),
    ([-INF, 0.5, INF], ["c", "d", "e"], _stats(3, ('"-Infinity"', '"Infinity"'), ("c", "e"))),
    # A writer taking bounds from Parquet footers, which leave NaN out.
    ([1.0, 2.0, NAN], ["a", "b", "c"], _stats(3, ("1.0", "2.0"), ("a", "c"))),
    # Bare tokens (Python's json.dumps, some writers).
    ([3.0, NAN], ["f", "g"], _stats(2, ("3.0", "NaN"), ("f", "g"))),
    ([10.0, None], ["h", "h"], _stats(2, ("10.0", "10.0"), ("h", "h"), x_nulls=1)),
    ([20.0, 30.0], ["i", "j"], _stats(2, ("20.0", "30.0"), ("i", "j"))),
]

X = S.Column(("x",))
KernelCase = tuple[str, S.Predicate, Callable[[float | None, str], bool | None]]
KERNEL_CASES: list[KernelCase] = [
    ("x > 5", S.Compare(">", X, S.Literal(5.0)), lambda x, s: spark_compare(">", x, 5.0)),
    ("x >= 2.5", S.Compare(">=", X, S.Literal(2.5)), lambda x, s: spark_compare(">=", x, 2.5)),
    ("x > Infinity", S.Compare(">", X, S.Literal(INF)), lambda x, s: spark_compare(">", x, INF)),
    ("x = NaN", S.Compare("=", X, S.Literal(NAN)), lambda x, s: spark_compare("=", x, NAN)),
    ("x = 'NaN'", S.Compare("=", X, S.Literal("NaN")), lambda x, s: spark_compare("=", x, NAN)),
    ("x < NaN", S.Compare("<", X, S.Literal(NAN)), lambda x, s: spark_compare("<", x, NAN)),
    ("x < 0", S.Compare("<", X, S.Literal(0.0)), lambda x, s: spark_compare("<", x, 0.0)),
    ("x <= 1", S.Compare("<=", X, S.Literal(1.0)), lambda x, s: spark_compare("<=", x, 1.0)),
    ("x = 25", S.Compare("=", X, S.Literal(25.0)), lambda x, s: spark_compare("=", x, 25.0)),
    (
        "x IN (NaN, 25)",
        S.In(X, (S.Literal(NAN), S.Literal(25.0))),
        lambda x, s: spark_compare("=", x, NAN) or spark_compare("=", x, 25.0),
    ),
    ("x IS NULL", S.IsNull(X), lambda x, s: x is None),
    ("x IS NOT NULL", S.IsNull(X, negated=True), lambda x, s: x is not None),
    ("NOT (x < 5)", S.Not(S.Compare("<", X, S.Literal(5.0))), lambda x, s: spark_not(spark_compare("<", x, 5.0))),
    ("NOT (x > 5)", S.Not(S.Compare(">", X, S.Literal(5.0))), lambda x, s: spark_not(spark_compare(">", x, 5.0))),
    ("s = 'NaN'", S.Compare("=", S.Column(("s",)), S.Literal("NaN")), lambda x, s: s == "NaN"),
]


def _stats_files(stats: list[str]) -> pa.Table:
    return pa.table({"partitionValues": pa.array([[]] * len(stats), pa.map_(pa.string(), pa.string())), "stats": pa.array(stats)})


@pytest.mark.parametrize(("name", "predicate", "oracle"), KERNEL_CASES, ids=[c[0] for c in KERNEL_CASES])
def test_nan_and_infinity_stats_never_drop_a_file_that_may_match(name: str, predicate: S.Predicate, oracle: Callable) -> None:
    keep = S.SkippingEvaluator(_stats_files([f[2] for f in NAN_FILES]), DOUBLE_AND_STRING, ()).keep(predicate).to_pylist()
    for (xs, ss, stats), kept in zip(NAN_FILES, keep, strict=True):
        if any(oracle(x, s) is True for x, s in zip(xs, ss, strict=True)):
            assert kept, f"{name}: a file with a matching row was dropped (values {xs}, stats {stats})"


def test_finite_stats_still_prune_next_to_nan_stats() -> None:
    """The fix keeps skipping: finite bounds that exclude a value still drop the file."""
    evaluator = S.SkippingEvaluator(_stats_files([f[2] for f in NAN_FILES]), DOUBLE_AND_STRING, ())
    # File 4's max is NaN, so unknown: its min of 3 cannot rule out 25.
    assert evaluator.keep(S.Compare("=", X, S.Literal(25.0))).to_pylist()[3:] == [False, True, False, True]
    assert evaluator.keep(S.Compare("<", X, S.Literal(0.0))).to_pylist()[3:] == [False, False, False, False]
    assert evaluator.keep(S.IsNull(X)).to_pylist() == [False, False, False, False, False, True, False]


def test_checkpoint_stats_parsed_keeps_bounds_next_to_nan_stats() -> None:
    """One file's "NaN" must not null every file's ``stats_parsed`` (or fail the checkpoint)."""
    leaves = stats_leaves(DOUBLE_AND_STRING, (), {})
    parsed = parsed_stats(pa.array([f[2] for f in NAN_FILES]), leaves).to_pylist()
    assert [p["minValues"]["x"] for p in parsed][5:] == [10.0, 20.0]
    assert [p["maxValues"]["s"] for p in parsed] == ["b", "a", "e", "c", "g", "h", "j"]
    assert parsed[0]["minValues"]["s"] == "NaN", "a string bound spelled NaN stays a string"
    assert parsed[2]["minValues"]["x"] == -INF and parsed[2]["maxValues"]["x"] == INF
    assert math.isnan(parsed[0]["maxValues"]["x"]) and math.isnan(parsed[4]["maxValues"]["x"])


def test_nan_partition_values_compare_as_spark_orders_them() -> None:
    """Partition values are evaluated exactly, so they must follow Spark: NaN tops every double, NaN = NaN."""
    schema = parse_schema('{"type":"struct","fields":[{"name":"p","type":"double","nullable":true,"metadata":{}}]}')
    values = [NAN, 1.5, INF, None]
    files = pa.table(
        {
            "partitionValues": pa.array(
                [[("p", "NaN")], [("p", "1.5")], [("p", "Infinity")], [("p", None)]], pa.map_(pa.string(), pa.string())
            ),
            "stats": pa.array([None] * 4, pa.string()),
        }
    )
    evaluator = S.SkippingEvaluator(files, schema, ("p",))
    p = S.Column(("p",))
    for op in _OPS:
        for literal in (5.0, NAN, INF):
            expected = [spark_compare(op, v, literal) is True for v in values]
            assert evaluator.keep(S.Compare(op, p, S.Literal(literal))).to_pylist() == expected, (op, literal)
    assert evaluator.keep(S.Not(S.Compare("<", p, S.Literal(5.0)))).to_pylist() == [True, False, True, False]


SPARK_ROWS: list[list[tuple[int, float | None]]] = [
    [(1, 1.0), (2, NAN)],
    [(3, NAN), (4, NAN)],
    [(5, -INF), (6, 0.5), (7, INF)],
    [(8, 10.0), (9, None)],
    [(10, 20.0), (11, 30.0)],
]
# delta-spark's spelling of each file's stats (Spark's min/max, Jackson's quoted non-finite numbers).
SPARK_STATS = [
    '{"numRecords":2,"minValues":{"id":1,"x":1.0},"maxValues":{"id":2,"x":"NaN"},"nullCount":{"id":0,"x":0}}',
    '{"numRecords":2,"minValues":{"id":3,"x":"NaN"},"maxValues":{"id":4,"x":"NaN"},"nullCount":{"id":0,"x":0}}',
    '{"numRecords":3,"minValues":{"id":5,"x":"-Infinity"},"maxValues":{"id":7,"x":"Infinity"},"nullCount":{"id":0,"x":0}}',
    '{"numRecords":2,"minValues":{"id":8,"x":10.0},"maxValues":{"id":9,"x":10.0},"nullCount":{"id":0,"x":1}}',
    '{"numRecords":2,"minValues":{"id":10,"x":20.0},"maxValues":{"id":11,"x":30.0},"nullCount":{"id":0,"x":0}}',
]
SPARK_CONDITIONS: list[tuple[str, Callable[[float | None], bool | None]]] = [
    ("x > 5", lambda x: spark_compare(">", x, 5.0)),
    ("x = 'NaN'", lambda x: spark_compare("=", x, NAN)),
    ("isnan(x)", lambda x: x is not None and math.isnan(x)),
    ("x IS NULL", lambda x: x is None),
    ("x < 0", lambda x: spark_compare("<", x, 0.0)),
    ("x >= 20", lambda x: spark_compare(">=", x, 20.0)),
    ("NOT (x < 5)", lambda x: spark_not(spark_compare("<", x, 5.0))),
    ("x = 25", lambda x: spark_compare("=", x, 25.0)),
]


@pytest.fixture
def nan_stats_table(spark, tmp_path: Path) -> str:
    """A table of one file per group of rows, its log's stats rewritten as delta-spark spells them."""
    path = str(tmp_path / "nan_stats")
    for rows in SPARK_ROWS:
        spark.createDataFrame(rows, "id long, x double").coalesce(1).write.format("delta").mode("append").save(path)
    for version, stats in enumerate(SPARK_STATS):
        lines = commit_path(path, version).read_text().splitlines()
        actions = [json.loads(line) for line in lines]
        for action in actions:
            if "add" in action:
                action["add"]["stats"] = stats
        commit_path(path, version).write_text("".join(json.dumps(a) + "\n" for a in actions))
    return path


def _ids(rows: list) -> list[int]:
    return sorted(r["id"] for r in rows)


@pytest.mark.parametrize(("condition", "oracle"), SPARK_CONDITIONS, ids=[c for c, _ in SPARK_CONDITIONS])
def test_filtered_reads_over_delta_spark_nan_stats_return_every_matching_row(
    spark, nan_stats_table: str, condition: str, oracle: Callable
) -> None:
    expected = sorted(i for rows in SPARK_ROWS for i, x in rows if oracle(x) is True)
    got = spark.read.format("delta").load(nan_stats_table).where(condition).select("id").collect()
    assert _ids(got) == expected


def test_delete_over_delta_spark_nan_stats_deletes_exactly_the_matching_rows(spark, nan_stats_table: str) -> None:
    from sparkdelta.tables import DeltaTable

    DeltaTable.forPath(spark, nan_stats_table).delete("x > 5")
    expected = sorted(i for rows in SPARK_ROWS for i, x in rows if spark_compare(">", x, 5.0) is not True)
    assert _ids(spark.read.format("delta").load(nan_stats_table).select("id").collect()) == expected


# --------------------------------------------------------------------------- 5. damaged checkpoints


def corrupt_column(path: Path, column: str) -> None:
    """Overwrite the pages of one top-level column of a Parquet file; the footer stays intact."""
    row_group = pq.ParquetFile(path).metadata.row_group(0)
    chunks = [row_group.column(i) for i in range(row_group.num_columns)]
    chunks = [c for c in chunks if c.path_in_schema.split(".")[0] == column]
    start = min(c.dictionary_page_offset or c.data_page_offset for c in chunks)
    end = max((c.dictionary_page_offset or c.data_page_offset) + c.total_compressed_size for c in chunks)
    data = bytearray(path.read_bytes())
    data[start:end] = b"\xff" * (end - start)
    path.write_bytes(bytes(data))
    pq.ParquetFile(path).metadata  # noqa: B018 - the footer still reads; the damage shows only on decoding


def checkpoint_file(root: Path, version: int) -> Path:
    return root / "_delta_log" / f"{version:020d}.checkpoint.parquet"


def build_checkpointed_table(root: Path) -> None:
    """Versions 0..7, checkpoints at 3 and 6; version 5 removes a file."""
    create_table(root, configuration={"delta.checkpointInterval": "3"})
    for v in range(1, 8):
        actions: list = [write_data_file(root, f"p=a/f{v}.parquet", [v])]
        if v == 5:
            actions.append(remove("p=a/f2.parquet"))
        Table(str(root)).transaction().commit(actions, "WRITE")
    assert checkpoint_file(root, 3).exists() and checkpoint_file(root, 6).exists()


def deltars_files(root: Path, version: int, without: Path, tmp_path: Path) -> list[str]:
    """Oracle: delta-rs on a copy of the table lacking the damaged checkpoint."""
    copy = tmp_path / f"oracle_{version}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root, copy)
    (copy / "_delta_log" / without.name).unlink()
    (copy / "_delta_log" / "_last_checkpoint").unlink(missing_ok=True)
    return delta_rs_files(copy, version)


@pytest.mark.parametrize("column", ["add", "metaData"])
def test_damaged_checkpoint_falls_back_with_a_warning_naming_it(tmp_path: Path, column: str) -> None:
    root = tmp_path / "t"
    build_checkpointed_table(root)
    bad = checkpoint_file(root, 6)
    corrupt_column(bad, column)
    for version in (6, 7, None):
        with pytest.warns(RuntimeWarning, match=bad.name):
            snapshot = Table(str(root)).snapshot(version)
            files = sorted(snapshot.file_paths())
        assert snapshot.version == (7 if version is None else version)
        assert files == deltars_files(root, snapshot.version, bad, tmp_path)


def test_every_damaged_checkpoint_falls_back_to_the_json_commits(tmp_path: Path) -> None:
    root = tmp_path / "t"
    build_checkpointed_table(root)
    for version in (3, 6):
        corrupt_column(checkpoint_file(root, version), "add")
    with pytest.warns(RuntimeWarning) as warned:
        files = sorted(Table(str(root)).snapshot(7).file_paths())
    messages = " ".join(str(w.message) for w in warned)
    assert checkpoint_file(root, 6).name in messages and checkpoint_file(root, 3).name in messages
    expected = sorted(f"p=a/f{v}.parquet" for v in range(1, 8) if v != 2)
    assert files == expected


def test_damaged_checkpoint_without_fallback_names_table_version_and_file(tmp_path: Path) -> None:
    root = tmp_path / "t"
    build_checkpointed_table(root)
    for v in range(6):
        commit_path(root, v).unlink()  # cleaned up: only the checkpoint at 6 rebuilds versions 6 and 7
    checkpoint_file(root, 3).unlink()
    bad = checkpoint_file(root, 6)
    corrupt_column(bad, "add")
    with pytest.raises(InvalidLogError) as error:
        Table(str(root)).snapshot(7).files  # noqa: B018
    message = str(error.value)
    assert str(root) in message and "version 7" in message and bad.name in message


class _FlakyStorage(LocalStorage):
    """Local files served through ``read`` (as an object store serves them), whose first
    checkpoint read fails with ``error``: a reset connection, a throttled request."""

    def __init__(self, error: OSError | None) -> None:
        super().__init__()
        self.error: OSError | None = error

    def read(self, path: str) -> bytes:
        if self.error is not None and path.endswith(".checkpoint.parquet"):
            error, self.error = self.error, None
            raise error
        return super().read(path)

    def local_path(self, path: str) -> str | None:
        return None


@pytest.mark.parametrize("fallback", [True, False], ids=["commits kept", "commits cleaned up"])
@pytest.mark.parametrize(
    "error", [OSError("connection reset by peer"), StorageError("throttled")], ids=lambda e: type(e).__name__
)
def test_a_failed_checkpoint_read_propagates_and_is_not_remembered_as_damage(
    tmp_path: Path, error: OSError, fallback: bool
) -> None:
    root = tmp_path / "t"
    build_checkpointed_table(root)
    if not fallback:
        for v in range(6):
            commit_path(root, v).unlink()
        checkpoint_file(root, 3).unlink()
    clear_log_cache()
    with pytest.raises(type(error)) as raised:
        Table(str(root), storage=_FlakyStorage(error)).snapshot().files  # noqa: B018
    assert raised.value is error and not isinstance(raised.value, InvalidLogError)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checkpoint is read again, not skipped as damaged
        snapshot = Table(str(root), storage=_FlakyStorage(None)).snapshot()
        assert sorted(snapshot.file_paths()) == sorted(f"p=a/f{v}.parquet" for v in range(1, 8) if v != 2)
    assert snapshot.segment.checkpoint_version == 6


class _VanishingLocalStorage(LocalStorage):
    """Local storage whose first checkpoint Arrow opens itself is not there: Arrow's own read fails."""

    missing = True

    def local_path(self, path: str) -> str | None:
        if self.missing and path.endswith(".checkpoint.parquet"):
            self.missing = False
            return f"{path}.gone"
        return super().local_path(path)


def test_a_failed_local_checkpoint_read_propagates_and_is_not_remembered_as_damage(tmp_path: Path) -> None:
    root = tmp_path / "t"
    build_checkpointed_table(root)
    clear_log_cache()
    with pytest.raises(FileNotFoundError):
        Table(str(root), storage=_VanishingLocalStorage()).snapshot().files  # noqa: B018
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Table(str(root)).snapshot().segment.checkpoint_version == 6


def test_spark_reads_every_row_past_a_damaged_checkpoint(spark, tmp_path: Path) -> None:
    from sparkdelta.kernel.checkpoint import write_checkpoint
    from sparkdelta.kernel.storage import LocalStorage

    path = tmp_path / "spark_t"
    for start in (0, 10, 20, 30):
        spark.range(start, start + 10).coalesce(1).write.format("delta").mode("append").save(str(path))
        if start in (10, 20):
            write_checkpoint(LocalStorage(), Table(str(path)).snapshot())
    bad = checkpoint_file(path, 2)
    corrupt_column(bad, "add")
    copy = tmp_path / "oracle"
    shutil.copytree(path, copy)
    (copy / "_delta_log" / bad.name).unlink()
    (copy / "_delta_log" / "_last_checkpoint").unlink()
    for version in (2, 3):
        expected = sorted(deltalake.DeltaTable(str(copy), version=version).to_pyarrow_table().column("id").to_pylist())
        with pytest.warns(RuntimeWarning, match=bad.name):
            rows = spark.read.format("delta").option("versionAsOf", version).load(str(path)).collect()
        assert _ids(rows) == expected == list(range(10 * (version + 1)))


# --------------------------------------------------------------------------- 6. malformed commit lines

_GOOD_ADD = {"path": "p=a/bad.parquet", "partitionValues": {"p": "a"}, "size": 10, "modificationTime": 1, "dataChange": True}
MALFORMED: dict[str, str] = {
    "null path": json.dumps({"add": {**_GOOD_ADD, "path": None}}) + "\n",
    "missing size": json.dumps({"add": {k: v for k, v in _GOOD_ADD.items() if k != "size"}}) + "\n",
    "path of wrong type": json.dumps({"add": {**_GOOD_ADD, "path": 42}}) + "\n",
    "bad second add": json.dumps({"add": _GOOD_ADD}) + "\n" + json.dumps({"add": {**_GOOD_ADD, "path": None}}) + "\n",
    "remove with null path": json.dumps({"remove": {"path": None, "deletionTimestamp": 1, "dataChange": True}}) + "\n",
    "garbage line": "this is not json\n",
    "truncated line": json.dumps({"add": _GOOD_ADD})[:40],
    "truncated commitInfo": '{"commitInfo":{"operation":"WRI',
    "partitionValues missing": json.dumps({"add": {k: v for k, v in _GOOD_ADD.items() if k != "partitionValues"}}) + "\n",
    "partitionValues not a map": json.dumps({"add": {**_GOOD_ADD, "partitionValues": "p=a"}}) + "\n",
    "partitionValues null": json.dumps({"add": {**_GOOD_ADD, "partitionValues": None}}) + "\n",
    "protocol version not a number": json.dumps({"protocol": {"minReaderVersion": "x", "minWriterVersion": 2}}) + "\n",
    "unparseable schemaString": json.dumps(
        {
            "metaData": {
                "id": "x",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": "not json",
                "partitionColumns": ["p"],
                "configuration": {},
                "createdTime": 1,
            }
        }
    )
    + "\n",
}


def write_malformed_version(root: Path, version: int, body: str) -> Path:
    path = commit_path(root, version)
    path.write_text(json.dumps({"commitInfo": {"operation": "WRITE", "timestamp": 1}}) + "\n" + body)
    return path


def assert_names_table_version_file(error: Exception, root: Path, version: int, path: Path) -> None:
    message = str(error)
    assert str(root) in message and f"version {version}" in message and path.name in message, message


@pytest.fixture
def written(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    create_table(root)
    Table(str(root)).transaction().commit([write_data_file(root, "p=a/good.parquet", [1])], "WRITE")
    return root


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_commit_line_is_an_error_naming_table_version_and_file(written: Path, case: str) -> None:
    bad = write_malformed_version(written, 2, MALFORMED[case])
    with pytest.raises(InvalidLogError) as error:
        Table(str(written)).snapshot().files  # noqa: B018
    assert_names_table_version_file(error.value, written, 2, bad)
    assert Table(str(written)).snapshot(1).file_paths() == ["p=a/good.parquet"], "earlier versions stay readable"


@pytest.mark.parametrize("case", list(MALFORMED))
def test_no_blind_append_commits_on_top_of_a_malformed_version(written: Path, case: str) -> None:
    bad = write_malformed_version(written, 2, MALFORMED[case])
    with pytest.raises(InvalidLogError) as error:
        Table(str(written)).transaction().commit([add("p=a/new.parquet")], "WRITE")
    assert_names_table_version_file(error.value, written, 2, bad)
    assert commit_versions(written) == [0, 1, 2]


@pytest.mark.parametrize("case", ["null path", "garbage line"])
def test_no_commit_lands_on_a_malformed_concurrent_winner(written: Path, case: str) -> None:
    """A transaction that read version 1 and loses version 2 to a malformed commit must not rebase onto it."""
    transaction = Table(str(written)).transaction()
    bad = write_malformed_version(written, 2, MALFORMED[case])
    with pytest.raises(InvalidLogError) as error:
        transaction.commit([add("p=a/new.parquet")], "WRITE")
    assert_names_table_version_file(error.value, written, 2, bad)
    assert commit_versions(written) == [0, 1, 2]


def test_spark_refuses_to_read_or_append_over_a_malformed_version(spark, tmp_path: Path) -> None:
    path = tmp_path / "spark_bad"
    spark.range(3).write.format("delta").save(str(path))
    bad = write_malformed_version(path, 1, MALFORMED["null path"])
    with pytest.raises(InvalidLogError) as error:
        spark.read.format("delta").load(str(path)).collect()
    assert_names_table_version_file(error.value, path, 1, bad)
    with pytest.raises(InvalidLogError):
        spark.range(3, 6).write.format("delta").mode("append").save(str(path))
    assert commit_versions(path) == [0, 1]
    assert _ids(spark.read.format("delta").option("versionAsOf", 0).load(str(path)).collect()) == [0, 1, 2]


def _refuse_bare_token(token: str) -> Any:
    raise AssertionError(f"stats hold the bare token {token}, which is not JSON")


def test_written_infinity_stats_are_strict_json_in_delta_spark_spelling(spark, tmp_path: Path) -> None:
    """Our writer spells infinite bounds as delta-spark does (quoted), and delta-rs still filters by them."""
    root = str(tmp_path / "inf")
    rows = [(1, math.inf), (2, 1.0), (3, -math.inf)]
    spark.createDataFrame(rows, "id INT, x DOUBLE").coalesce(1).write.format("delta").save(root)
    stats = json.loads(Table(root).snapshot().files.column("stats")[0].as_py(), parse_constant=_refuse_bare_token)
    assert (stats["minValues"]["x"], stats["maxValues"]["x"]) == ("-Infinity", "Infinity")
    assert sorted(r.id for r in spark.read.format("delta").load(root).where("x > 5").collect()) == [1]
    assert deltalake.DeltaTable(root).to_pyarrow_table(filters=[("x", ">", 5.0)]).column("id").to_pylist() == [1]


def test_a_partition_column_absent_from_partition_values_reads_as_null(written: Path) -> None:
    """delta-rs's log compactions write null partition values as an empty map; delta-spark reads
    an absent key as null, so the file is active with a null partition value, not refused."""
    write_malformed_version(written, 2, json.dumps({"add": {**_GOOD_ADD, "partitionValues": {}}}) + "\n")
    files = Table(str(written)).snapshot().files
    by_path = dict(zip(files.column("path").to_pylist(), files.column("partitionValues").to_pylist(), strict=True))
    assert set(by_path) == {"p=a/good.parquet", "p=a/bad.parquet"}
    assert dict(by_path["p=a/bad.parquet"]).get("p") is None

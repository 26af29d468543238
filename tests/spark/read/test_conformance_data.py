"""Data reads against the reference tables: our Spark rows must match delta-rs's.

For every table and version where delta-rs read the data (``rows`` in
``expected/manifest.json``), ``read_snapshot`` must return the same columns, with the
same types, holding the same multiset of rows as ``expected/<table>/vN.parquet``: order
is not meaningful. Values are compared after normalization: timestamps as UTC instants
(microseconds; ``timestamp`` and ``timestamp_ntz`` are kept apart), decimals exactly,
floats with NaN equal to NaN, structs field by field, maps as unordered sets of entries.

Until the engine implements a reader feature, the right answer is a refusal that names
it (``UnsupportedFeatureError``), never wrong rows: a refusal passes only if every
feature it names is a reader feature the snapshot's protocol really lists. Refusals are
counted and listed in the terminal summary.

Where delta-rs could not read a version (``error`` in the manifest), delta-rs is not
always right (see shared/conformance/README.md), so we decide per cause:

- some active data file is missing, or too small to be Parquet (tables written for log
  replay tests, or vacuumed): the read must fail with Spark's own error naming that file
  (``[PATH_NOT_FOUND]`` at ``load``; "not a Parquet file" at the first action), never
  return partial rows or crash in our code;
- otherwise (delta-rs lacks a reader feature, or mis-parses a decimal partition value)
  we must refuse by name, or read rows that agree with an independent oracle: another
  version or table holding the same data that delta-rs did read, rows written out from
  the reference suites (DeltaTableReadsSuite) and the log's own statistics, or at least
  the row count that the ``add`` actions' ``numRecords`` statistics add up to.

Deletion-vector tables are the main such case (delta-rs 1.x refuses them): the oracle is
the reference generator's rows less the DELETEs each version's commitInfo records, and the
row count is ``numRecords`` less each DV's cardinality.

delta-rs is also wrong where it did answer: it reads column-mapped tables' data as all
nulls (it looks columns up by logical name). There the oracle is a direct pyarrow read of
the same files with physical names mapped back; those cases are listed in the summary.

The last tests cover what the reference tables do not: file paths with characters Hadoop
globs on or java.net.URI encodes, which once made reads fail or drop rows silently.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from oracles import conformance_root, load_manifest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql.types import VariantVal

from sparkdelta.exceptions import DeltaError, DeltaUnsupportedOperationException, UnsupportedFeatureError
from sparkdelta.kernel import Table
from sparkdelta.spark.paths import absolute_path
from sparkdelta.spark.pyspark_classes import is_connect
from sparkdelta.spark.read.parquet import read_snapshot

MANIFEST = load_manifest()


def _versions(predicate: Any) -> list[tuple[str, int]]:
    return [
        (name, int(version))
        for name, table in sorted(MANIFEST.items())
        if "error" not in table
        for version, expected in sorted(table["versions"].items(), key=lambda kv: int(kv[0]))
        if predicate(expected)
    ]


DATA_CASES = _versions(lambda e: "rows" in e)
UNREAD_CASES = _versions(lambda e: "rows" not in e and "error" in e)

# What a refusal named, per case, for the terminal summary.
REFUSALS: dict[str, str] = {}
# Cases where delta-rs's rows are known wrong and another oracle was used instead.
ORACLE_REPLACED: list[str] = []


class _RefusalSummary:
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if ORACLE_REPLACED:
            terminalreporter.section("conformance data: delta-rs read column-mapped data as nulls")
            terminalreporter.write_line(f"compared with a direct pyarrow read instead: {', '.join(sorted(ORACLE_REPLACED))}")
        if not REFUSALS:
            return
        terminalreporter.section(f"conformance data: {len(REFUSALS)} version(s) refused by feature name")
        by_reason: dict[str, list[str]] = {}
        for case, reason in sorted(REFUSALS.items()):
            by_reason.setdefault(reason, []).append(case)
        for reason, cases in sorted(by_reason.items()):
            terminalreporter.write_line(f"{reason}: {len(cases)} version(s): {', '.join(cases)}")


@pytest.fixture(scope="module", autouse=True)
def _report_refusals(request: pytest.FixtureRequest) -> None:
    manager = request.config.pluginmanager
    if not manager.has_plugin("sparkdelta-conformance-data-refusals"):
        manager.register(_RefusalSummary(), "sparkdelta-conformance-data-refusals")


def _path(name: str) -> str:
    return str(conformance_root() / "tables" / name)


def _expected(name: str, version: int) -> pa.Table:
    return pq.read_table(conformance_root() / "expected" / name / f"v{version}.parquet")


# ---------------------------------------------------------------------------------------
# Normalization: Arrow tables from either reader to comparable, hashable rows.

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICRO = dt.timedelta(microseconds=1)


def _type_signature(t: pa.DataType) -> str:
    """The Delta-level type an Arrow type carries (ignoring string/list widths and units)."""
    if pa.types.is_dictionary(t):
        return _type_signature(t.value_type)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or pa.types.is_fixed_size_binary(t):
        return "binary"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_map(t):
        return f"map<{_type_signature(t.key_type)},{_type_signature(t.item_type)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_fixed_size_list(t):
        return f"array<{_type_signature(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ",".join(f"{f.name}:{_type_signature(f.type)}" for f in t) + ">"
    return str(t)


def _micros(value: Any) -> int:
    """Microseconds since the epoch: UTC for aware datetimes, wall clock for naive ones."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return (value - _EPOCH) // _MICRO


def _value(value: Any, t: pa.DataType) -> Any:
    """A hashable, exactly comparable form of one Python value of Arrow type ``t``."""
    if value is None:
        return None
    if pa.types.is_dictionary(t):
        return _value(value, t.value_type)
    if pa.types.is_timestamp(t):
        return ("timestamp" if t.tz is not None else "timestamp_ntz", _micros(value))
    if pa.types.is_floating(t):
        return "NaN" if math.isnan(value) else value + 0.0  # -0.0 == 0.0 already
    if pa.types.is_decimal(t):
        return Decimal(value)
    if pa.types.is_map(t):
        entries = [(_value(k, t.key_type), _value(v, t.item_type)) for k, v in value]
        return ("map", tuple(sorted(entries, key=repr)))
    if pa.types.is_struct(t):
        return tuple((f.name, _value(value[f.name], f.type)) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_fixed_size_list(t):
        return tuple(_value(v, t.value_type) for v in value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return value


def _column(column: pa.ChunkedArray) -> list[Any]:
    t = column.type
    # Fast paths for big flat columns (a million decimals in parquet-decimal-dictionaries).
    if pa.types.is_decimal(t):
        return [None if v is None else Decimal(v) for v in pc.cast(column, pa.string()).to_pylist()]
    if pa.types.is_timestamp(t):
        kind = "timestamp" if t.tz is not None else "timestamp_ntz"
        micros = pc.cast(column, pa.timestamp("us", t.tz), safe=False).cast(pa.int64())
        return [None if v is None else (kind, v) for v in micros.to_pylist()]
    if pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_boolean(t):
        return column.to_pylist()
    return [_value(v, t) for v in column.to_pylist()]


def _rows(table: pa.Table) -> Counter:
    return Counter(zip(*[_column(c) for c in table.columns], strict=True)) if table.num_columns else Counter({(): table.num_rows})


def _assert_same_rows(ours: pa.Table, expected: pa.Table, what: str) -> None:
    assert ours.column_names == expected.column_names, f"{what}: column names differ"
    our_types = {f.name: _type_signature(f.type) for f in ours.schema}
    expected_types = {f.name: _type_signature(f.type) for f in expected.schema}
    assert our_types == expected_types, f"{what}: column types differ"
    assert ours.num_rows == expected.num_rows, f"{what}: row counts differ"
    mine, theirs = _rows(ours), _rows(expected)
    if mine != theirs:
        extra, missing = mine - theirs, theirs - mine
        pytest.fail(
            f"{what}: {sum(extra.values())} row(s) only in ours, {sum(missing.values())} only in the oracle\n"
            f"only ours (first 5): {list(extra.items())[:5]}\nonly oracle (first 5): {list(missing.items())[:5]}"
        )


def test_the_comparison_tells_rows_apart() -> None:
    """The normalization must not hide the differences this file exists to catch."""

    def same(a: pa.Table, b: pa.Table) -> bool:
        try:
            _assert_same_rows(a, b, "self-test")
        except (AssertionError, pytest.fail.Exception):
            return False
        return True

    utc = pa.timestamp("us", "UTC")
    ts = pa.table({"t": pa.array([0, 1], utc)})
    assert same(ts, pa.table({"t": pa.array([1000, 0], pa.timestamp("ns", "UTC"))}))  # unit, order
    assert same(ts, pa.table({"t": pa.array([0, 1], pa.timestamp("us", "+00:00"))}))  # zone spelling
    assert not same(ts, pa.table({"t": pa.array([0, 1], pa.timestamp("us"))}))  # ntz is not an instant
    assert not same(ts, pa.table({"t": pa.array([0, 2], utc)}))
    nan = pa.table({"f": pa.array([float("nan"), -0.0, None])})
    assert same(nan, pa.table({"f": pa.array([None, 0.0, float("nan")])}))
    assert not same(nan, pa.table({"f": pa.array([None, None, float("nan")])}))
    dec = pa.table({"d": pa.array([Decimal("1.10")], pa.decimal128(5, 2))})
    assert not same(dec, pa.table({"d": pa.array([Decimal("1.11")], pa.decimal128(5, 2))}))
    assert not same(dec, pa.table({"d": pa.array([Decimal("1.1")], pa.decimal128(5, 1))}))  # type differs
    maps = pa.table({"m": pa.array([[(1, "a"), (2, "b")]], pa.map_(pa.int32(), pa.string()))})
    assert same(
        maps,
        pa.table({"m": pa.array([[(2, "b"), (1, "a")]], pa.map_(pa.int32(), pa.string()))}),
    )
    assert not same(
        maps,
        pa.table({"m": pa.array([[(1, "a"), (2, "c")]], pa.map_(pa.int32(), pa.string()))}),
    )
    nested = pa.table(
        {
            "s": pa.array(
                [{"a": [1, 2], "b": None}],
                pa.struct([("a", pa.list_(pa.int64())), ("b", utc)]),
            )
        }
    )
    assert not same(
        nested,
        pa.table({"s": pa.array([{"a": [2, 1], "b": None}], nested.schema.field("s").type)}),
    )
    dup = pa.table({"x": [1, 1, 2]})
    assert not same(dup, pa.table({"x": [1, 2, 2]}))  # a multiset, not a set
    assert not same(dup, pa.table({"y": [1, 1, 2]}))


# ---------------------------------------------------------------------------------------
# Reading, and what a refusal must look like.


def _assert_refusal_names_real_features(error: UnsupportedFeatureError, snapshot: Any, case: str) -> None:
    listed = set(snapshot.protocol.reader_features or ())
    named = set(error.features)
    assert named, f"{case}: refusal names no feature: {error}"
    assert named <= listed, f"{case}: refusal names {sorted(named - listed)}, not in the protocol's {sorted(listed)}"
    for feature in named:
        assert feature in str(error), f"{case}: message does not name {feature}: {error}"
    REFUSALS[case] = "refused: " + ", ".join(sorted(named))


def _read(spark: Any, name: str, version: int) -> tuple[Any, pa.Table | None]:
    """(snapshot, rows), or (snapshot, None) after checking a refusal by feature name."""
    snapshot = Table(_path(name)).snapshot(version)
    assert snapshot.version == version
    try:
        frame = read_snapshot(spark, snapshot)
    except UnsupportedFeatureError as error:
        _assert_refusal_names_real_features(error, snapshot, f"{name}@v{version}")
        return snapshot, None
    if "variant" not in frame.schema.simpleString():
        return snapshot, frame.toArrow()
    # PySpark's toArrow cannot hold a null variant inside an array or map; collect instead.
    rows = [_variants_as_structs(row.asDict(recursive=True)) for row in frame.collect()]
    return snapshot, pa.Table.from_pylist(rows, _expected(name, version).schema)


def _variants_as_structs(value: Any) -> Any:
    """A collected value with each ``VariantVal`` as the (metadata, value) struct delta-rs reads."""
    if isinstance(value, VariantVal):
        return {"metadata": value.metadata, "value": value.value}
    if isinstance(value, dict):
        return {key: _variants_as_structs(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_variants_as_structs(item) for item in value]
    return value


# ---------------------------------------------------------------------------------------
# Where delta-rs is wrong: column-mapped data read as nulls.
#
# delta-rs (1.x) looks data columns up by their logical names, but a column-mapped table's
# files name them by physical name ("col-<uuid>"), so it returns every value as null
# (the reference suites expect real values, e.g. DeltaTableReadsSuite's
# "table-with-columnmapping-mode-{id,name}"). For those tables the oracle is a plain
# pyarrow read of delta-rs's own file list, with physical names mapped back to logical
# ones by the schema, cast to delta-rs's own Arrow schema.


def _all_null(table: pa.Table) -> bool:
    return all(column.null_count == len(column) for column in table.columns)


def _column_mapped(schema: dict) -> bool:
    return "delta.columnMapping.physicalName" in json.dumps(schema)


def _to_logical(value: Any, delta_type: Any) -> Any:
    if value is None or not isinstance(delta_type, dict):
        return value
    kind = delta_type["type"]
    if kind == "struct":
        return {
            f["name"]: _to_logical(
                value.get(f["metadata"].get("delta.columnMapping.physicalName", f["name"])),
                f["type"],
            )
            for f in delta_type["fields"]
        }
    if kind == "array":
        return [_to_logical(v, delta_type["elementType"]) for v in value]
    if kind == "map":
        return [
            (
                _to_logical(k, delta_type["keyType"]),
                _to_logical(v, delta_type["valueType"]),
            )
            for k, v in value
        ]
    return value


def _direct_read(name: str, version: int, schema: pa.Schema) -> pa.Table:
    recorded = MANIFEST[name]["versions"][str(version)]
    assert not MANIFEST[name]["partition_columns"], "partition values are not in the files"
    delta_schema = json.loads(recorded["schema"])
    root = conformance_root() / "tables" / name
    rows = [_to_logical(row, delta_schema) for path in recorded["files"] for row in pq.read_table(root / path).to_pylist()]
    return pa.Table.from_pylist(rows, schema)


def _oracle(name: str, version: int) -> tuple[pa.Table, str]:
    """delta-rs's rows, unless they are its column-mapping nulls (see above)."""
    expected = _expected(name, version)
    schema = json.loads(MANIFEST[name]["versions"][str(version)]["schema"])
    if expected.num_rows and _column_mapped(schema) and _all_null(expected):
        ORACLE_REPLACED.append(f"{name}@v{version}")
        return _direct_read(name, version, expected.schema), "a direct pyarrow read (delta-rs read nulls)"
    return expected, "delta-rs"


def _read_plan(name: str, version: int) -> tuple[Any, ...]:
    """What chooses how a version is read: the table, its protocol, schema, partitioning and
    settings, and whether deletion vectors are in use (Connect's pass reads one version per
    distinct answer)."""
    try:
        snapshot = Table(_path(name)).snapshot(version)
    except Exception as error:  # noqa: BLE001 - a version the kernel refuses is a plan of its own
        return name, version, type(error).__name__
    protocol, files = snapshot.protocol, snapshot.files
    vectors = "deletionVector" in files.column_names and files.column("deletionVector").null_count < files.num_rows
    return (
        name,
        protocol.min_reader_version,
        tuple(sorted(protocol.reader_features or ())),
        tuple(sorted(protocol.writer_features or ())),
        snapshot.metadata.schema_string,
        snapshot.partition_columns,
        tuple(sorted(snapshot.configuration.items())),
        vectors,
    )


ONE_VERSION_PER_PLAN = pytest.mark.connect_once_per(
    key=_read_plan, reason="other versions with the same read plan differ in the log and files the kernel reads, alike on both"
)


@ONE_VERSION_PER_PLAN
@pytest.mark.parametrize(("name", "version"), DATA_CASES, ids=[f"{n}@v{v}" for n, v in DATA_CASES])
def test_rows_match_delta_rs(spark: Any, name: str, version: int) -> None:
    recorded = MANIFEST[name]["versions"][str(version)]
    expected, source = _oracle(name, version)
    assert expected.num_rows == recorded["rows"] and expected.column_names == recorded["columns"]
    _, ours = _read(spark, name, version)
    if ours is None:
        return  # refused, by the name of a feature the protocol lists
    assert ours.num_rows == recorded["rows"]
    _assert_same_rows(ours, expected, f"{name}@v{version} vs {source}")


# ---------------------------------------------------------------------------------------
# Versions delta-rs could not read.


def _same_data_as(name: str, version: int) -> tuple[str, int] | None:
    """A version of the same table delta-rs did read, with the same files and schema."""
    versions = MANIFEST[name]["versions"]
    this = versions[str(version)]
    for other, recorded in versions.items():
        if "rows" in recorded and recorded["files"] == this["files"] and recorded["schema"] == this["schema"]:
            return name, int(other)
    return None


# The same rows under another table's name: these tables only add column mapping.
SAME_DATA = {
    "data-reader-timestamp_ntz-id-mode": "data-reader-timestamp_ntz",
    "data-reader-timestamp_ntz-name-mode": "data-reader-timestamp_ntz",
}


def _decimal_table_rows() -> pa.Table:
    # DeltaTableReadsSuite "basic decimal table": each file holds one row; the values
    # are also the files' min/max statistics in the log. delta-rs fails to parse the
    # partition value "-2342342.23423".
    d = Decimal
    return pa.table(
        {
            "part": pa.array(
                [d("-2342342.23423"), d("0.00004"), d("234.00000"), d("2342222.23454")],
                pa.decimal128(12, 5),
            ),
            "col1": pa.array([d("-999.99"), d("0.00"), d("1.00"), d("111.11")], pa.decimal128(5, 2)),
            "col2": pa.array(
                [d("-99999.99999"), d("0.00000"), d("2.00000"), d("22222.22222")],
                pa.decimal128(10, 5),
            ),
            "col3": pa.array(
                [
                    d("-9999999999.9999999999"),
                    d("0E-10"),
                    d("3.0000000000"),
                    d("3333333333.3333333333"),
                ],
                pa.decimal128(20, 10),
            ),
        }
    )


def _type_widening_rows() -> pa.Table:
    # DeltaTableReadsSuite / TypeWideningSuite "type-widening": the row written before
    # widening, read with the widened types (float 3.4f widens exactly, to 3.4000000953674316),
    # and the row written after it. Values are also in each file's log statistics.
    d = Decimal
    rows = [
        (1, 2, float(pa.scalar(3.4, pa.float32()).as_py()), 5.0, 6.0, 7.0, d("123.45"), d("67.89000"),
         d("1.0"), d("2.0"), d("3.0"), d("4.0"), dt.datetime(2024, 9, 9)),
        (2**63 - 1, 2**63 - 1, 1.234567890123, 1.234567890123, 1.234567890123, 1.234567890123,
         d("12345678901234.56"), d("12345678901.23456"), d("123.4"), d("12345.6"), d("1234567890.1"),
         d("123456789012345678.9"), dt.datetime(2024, 9, 9, 12, 34, 56, 123456)),
    ]  # fmt: skip
    schema = pa.schema(
        [
            ("byte_long", pa.int64()), ("int_long", pa.int64()), ("float_double", pa.float64()),
            ("byte_double", pa.float64()), ("short_double", pa.float64()), ("int_double", pa.float64()),
            ("decimal_decimal_same_scale", pa.decimal128(20, 2)), ("decimal_decimal_greater_scale", pa.decimal128(20, 5)),
            ("byte_decimal", pa.decimal128(11, 1)), ("short_decimal", pa.decimal128(11, 1)),
            ("int_decimal", pa.decimal128(11, 1)), ("long_decimal", pa.decimal128(21, 1)),
            ("date_timestamp_ntz", pa.timestamp("us")),
        ]
    )  # fmt: skip
    return pa.Table.from_pylist([dict(zip(schema.names, r, strict=True)) for r in rows], schema)


def _type_widening_nested_rows() -> pa.Table:
    # The same table family, widening int -> long inside a struct, a map and an array.
    schema = pa.schema(
        [
            ("struct", pa.struct([("a", pa.int64())])),
            ("map", pa.map_(pa.int64(), pa.int64())),
            ("array", pa.list_(pa.int64())),
        ]
    )
    big = 2**63 - 1
    rows = [
        {"struct": {"a": 1}, "map": [(2, 3)], "array": [4, 5]},
        {"struct": {"a": big}, "map": [(big, big)], "array": [big, -big - 1]},
    ]
    return pa.Table.from_pylist(rows, schema)


# Deletion-vector tables (delta-rs 1.x refuses them all). Their generator (GoldenTables)
# writes the rows below, then each later version DELETEs one value, which DeletionVectorSuite
# checks at the latest version; each commit's commitInfo must record that same DELETE.
DV_HISTORIES: dict[str, tuple[Callable[[], pa.Table], str, list[int]]] = {
    "dv-partitioned-with-checkpoint": (lambda: _dv_partitioned_rows(), "col1", list(range(0, 30, 2))),
    "dv-with-columnmapping": (lambda: _dv_partitioned_rows(), "col1", list(range(0, 30, 2))),
    "log-replay-dv-key-cases": (lambda: pa.table({"id": pa.array(range(50), pa.int64())}), "id", [0, 7, 14]),
}


def _dv_partitioned_rows() -> pa.Table:
    xs = range(50)
    return pa.table(
        {
            "part": pa.array([x % 10 for x in xs], pa.int32()),
            "col1": pa.array(xs, pa.int32()),
            "col2": pa.array([f"foo{x % 5}" for x in xs], pa.string()),
        }
    )


def _recorded_delete(name: str, version: int) -> tuple[str, int]:
    """(column, value) of the ``col = value`` DELETE that ``version``'s commitInfo records."""
    commit = conformance_root() / "tables" / name / "_delta_log" / f"{version:020d}.json"
    info = next(json.loads(line)["commitInfo"] for line in commit.read_text().splitlines() if '"commitInfo"' in line)
    assert info["operation"] == "DELETE", f"{name}@v{version}: {info['operation']}"
    match = re.fullmatch(r'\["\((\w+)#\d+L? = (-?\d+)\)"\]', info["operationParameters"]["predicate"])
    assert match, f"{name}@v{version}: unexpected predicate {info['operationParameters']['predicate']}"
    return match.group(1), int(match.group(2))


def _dv_table_rows(name: str, version: int) -> Callable[[], pa.Table]:
    def rows() -> pa.Table:
        initial, column, deleted = DV_HISTORIES[name]
        assert [_recorded_delete(name, v) for v in range(1, version + 1)] == [(column, d) for d in deleted[:version]]
        table = initial()
        return table.filter(pc.invert(pc.is_in(table.column(column), pa.array(deleted[:version], table.column(column).type))))

    return rows


HAND_WRITTEN: dict[tuple[str, int], Callable[[], pa.Table]] = {
    ("basic-decimal-table", 0): _decimal_table_rows,
    ("basic-decimal-table-legacy", 0): _decimal_table_rows,
    ("type-widening", 2): _type_widening_rows,
    ("type-widening-nested", 2): _type_widening_nested_rows,
    **{
        (name, version): _dv_table_rows(name, version)
        for name in DV_HISTORIES
        for version in range(len(DV_HISTORIES[name][2]) + 1)
    },
}


def _broken_files(snapshot: Any) -> list[str]:
    """Active files that are missing, or too small to hold a Parquet footer."""
    paths = [absolute_path(snapshot.table_root, p) for p in snapshot.files.column("path").to_pylist()]
    return [p for p in paths if not os.path.isfile(p) or os.path.getsize(p) < 12]


def _stats_row_count(snapshot: Any) -> int | None:
    """Rows the log says the snapshot holds: each file's ``numRecords`` (all its rows) less its DV's cardinality."""
    total = 0
    files = snapshot.files
    for stats, dv in zip(files.column("stats").to_pylist(), files.column("deletionVector").to_pylist(), strict=True):
        if not stats or "numRecords" not in json.loads(stats):
            return None
        total += json.loads(stats)["numRecords"] - (dv["cardinality"] if dv else 0)
    return total


@ONE_VERSION_PER_PLAN
@pytest.mark.parametrize(("name", "version"), UNREAD_CASES, ids=[f"{n}@v{v}" for n, v in UNREAD_CASES])
def test_versions_delta_rs_could_not_read(spark: Any, name: str, version: int) -> None:
    snapshot = Table(_path(name)).snapshot(version)
    broken = _broken_files(snapshot)
    if broken:
        # The log names data files that are not there (or are not Parquet): Spark's own
        # error must say which, before any rows are returned.
        with pytest.raises((PySparkException, Py4JJavaError, DeltaError)) as raised:
            try:
                read_snapshot(spark, snapshot).toArrow()
            except UnsupportedFeatureError as error:
                _assert_refusal_names_real_features(error, snapshot, f"{name}@v{version}")
                raise
        if not isinstance(raised.value, UnsupportedFeatureError):
            assert any(os.path.basename(p) in str(raised.value) for p in broken), str(raised.value)[:500]
        return

    _, ours = _read(spark, name, version)
    if ours is None:
        return
    counted = _stats_row_count(snapshot)
    if counted is not None:
        assert ours.num_rows == counted, "rows read differ from the log's numRecords statistics"
    oracle = _same_data_as(name, version)
    if oracle is None and name in SAME_DATA and "rows" in MANIFEST[SAME_DATA[name]]["versions"].get(str(version), {}):
        oracle = SAME_DATA[name], version
    if oracle is not None:
        _assert_same_rows(
            ours,
            _expected(*oracle),
            f"{name}@v{version} vs delta-rs's {oracle[0]}@v{oracle[1]}",
        )
    elif (name, version) in HAND_WRITTEN:
        _assert_same_rows(
            ours,
            HAND_WRITTEN[name, version](),
            f"{name}@v{version} vs the reference suite",
        )
    else:
        assert counted is not None, "no oracle at all for this version: add one"


# ---------------------------------------------------------------------------------------
# Paths the reference tables do not cover. Other writers (and users' directory names) put
# characters in paths that Hadoop takes for glob syntax ("[", "{", "*", "?", "\\") or that
# java.net.URI percent-encodes although they are not ASCII (U+00A0, U+3000: Java "space
# characters"); Spark normalizes "." and "//" segments. A file whose path Spark spells
# differently from us would lose its partition values: every such row must still come
# back, with the right values.

AWKWARD = [
    " ", "%", "%20", "#", "+", ":", "é", "日本", "😀", "[", "]", "{a,b}", "*", "?", "\\", "^", "`",
    "\u00a0", "\u3000", "\u2028", "\u0085", "\u200b", "a=b", "&$@;,'!~",
]  # fmt: skip


def _write_awkward_table(root: Any, values: list[str] = AWKWARD) -> list[tuple[int, str]]:
    from urllib.parse import quote

    os.makedirs(root / "_delta_log")
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "p", "type": "string", "nullable": True, "metadata": {}},
    ]}  # fmt: skip
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "awkward", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(schema),
                      "partitionColumns": ["p"], "configuration": {}, "createdTime": 0}},
    ]  # fmt: skip
    rows = []
    for i, value in enumerate(values):
        # Directory names as a non-escaping writer makes them; one spelled with "./" and "//".
        relative = f"p={value}/part-{i}.parquet" if i % 5 else f"./p={value}//part-{i}.parquet"
        target = root / relative.replace("//", "/")
        os.makedirs(target.parent, exist_ok=True)
        pq.write_table(pa.table({"id": pa.array([i, 100 + i], pa.int64())}), target)
        add = {"path": quote(relative, safe="/"), "partitionValues": {"p": value}, "size": target.stat().st_size,
               "modificationTime": 0, "dataChange": True}  # fmt: skip
        actions.append({"add": add})
        rows += [(i, value), (100 + i, value)]
    (root / "_delta_log" / "00000000000000000000.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return rows


def test_awkward_paths_keep_every_row_and_its_partition_value(spark: Any, tmp_path: Any) -> None:
    """Every row, from a table folder named with glob characters. A Spark Connect server
    expands globs in read paths, and Hadoop's expansion cannot parse a ':' folder name: a
    path with both is refused by name there, and the rest of the table reads."""
    root = tmp_path / "table [1] {x} *?"
    connect = is_connect(spark)
    expected = _write_awkward_table(root, [v for v in AWKWARD if ":" not in v] if connect else AWKWARD)
    rows = read_snapshot(spark, Table(str(root)).snapshot()).collect()
    assert sorted((r.id, r.p) for r in rows) == sorted(expected)
    if connect:
        refused = tmp_path / "refused [1]"
        _write_awkward_table(refused, ["a", ":"])
        with pytest.raises(DeltaUnsupportedOperationException, match="glob characters"):
            read_snapshot(spark, Table(str(refused)).snapshot()).collect()


def test_a_file_spelled_differently_fails_loudly_instead_of_losing_rows(
    spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sparkdelta.spark.read.parquet as read_module

    root = tmp_path / "table"
    _write_awkward_table(root)
    spelled = read_module.spark_file_uris
    monkeypatch.setattr(read_module, "spark_file_uris", lambda root, paths: ["file:/nowhere" + p for p in spelled(root, paths)])
    frame = read_snapshot(spark, Table(str(root)).snapshot())
    with pytest.raises(Exception, match="matches no file"):
        frame.collect()
    assert frame.select("id").count() == 2 * len(AWKWARD), "rows read without partition columns are all there"

"""The kernel's ``Scan`` (``Snapshot.scan``): which files a read needs, and their columns, without Spark."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from sparkdelta.kernel import Table
from sparkdelta.kernel import skipping as S
from sparkdelta.kernel.scan import NUM_RECORDS, PARTITION_VALUES, num_records, partition_keys, scan_files

ID = S.Column(("id",))
P = S.Column(("p",))


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A delta-rs table partitioned by ``p``: four appends of 10 rows, ids 0..39, p = append % 2."""
    path = str(tmp_path_factory.mktemp("scan") / "t")
    for n in range(4):
        ids = pa.array(range(n * 10, n * 10 + 10), pa.int64())
        write_deltalake(path, pa.table({"id": ids, "p": pa.array([n % 2] * 10, pa.int32())}), partition_by=["p"], mode="append")
    return path


def _ids_range(files: pa.Table) -> list[tuple[int, int]]:
    stats = [json.loads(s) for s in files.column("stats").to_pylist()]
    return sorted((s["minValues"]["id"], s["maxValues"]["id"]) for s in stats)


def test_a_scan_without_a_predicate_selects_every_file(written: str) -> None:
    snapshot = Table(written).snapshot()
    scan = snapshot.scan()
    assert scan.files.num_rows == snapshot.num_files == 4
    assert scan.selection.to_pylist() == [True] * 4
    metrics = scan.metrics
    assert (metrics.files_total, metrics.files_selected, metrics.files_pruned) == (4, 4, 0)
    assert metrics.bytes_selected == metrics.bytes_total == snapshot.size_in_bytes


def test_stats_skip_files_that_cannot_match(written: str) -> None:
    scan = Table(written).snapshot().scan(S.Compare("<", ID, S.Literal(15)))
    assert _ids_range(scan.files) == [(0, 9), (10, 19)]
    assert (scan.metrics.files_selected, scan.metrics.files_pruned) == (2, 2)
    assert scan.metrics.bytes_selected == sum(scan.files.column("size").to_pylist())
    assert sum(scan.selection.to_pylist()) == 2


def test_partition_values_prune_and_combine_with_stats(written: str) -> None:
    snapshot = Table(written).snapshot()
    assert _ids_range(snapshot.scan(S.Compare("=", P, S.Literal(1))).files) == [(10, 19), (30, 39)]
    both = snapshot.scan(S.And(S.Compare("=", P, S.Literal(1)), S.Compare(">", ID, S.Literal(20))))
    assert _ids_range(both.files) == [(30, 39)]
    assert snapshot.scan(S.IsNull(P)).files.num_rows == 0


def test_partition_values_are_typed_by_the_schema(written: str) -> None:
    files = Table(written).snapshot().scan().files
    values = files.column(PARTITION_VALUES)
    assert values.type == pa.struct([("p", pa.int32())])
    assert sorted(v["p"] for v in values.to_pylist()) == [0, 0, 1, 1]


def test_num_records_come_from_the_stats(written: str) -> None:
    files = Table(written).snapshot().scan().files
    assert files.column(NUM_RECORDS).type == pa.int64()
    assert files.column(NUM_RECORDS).to_pylist() == [10] * 4


def test_a_projection_keeps_its_partition_columns_only(written: str) -> None:
    snapshot = Table(written).snapshot()
    assert [f.name for f in snapshot.scan(columns=["ID"]).schema.fields] == ["id"]
    assert snapshot.scan(columns=["id"]).files.column(PARTITION_VALUES).type == pa.struct([])
    assert snapshot.scan(columns=["P", "id"]).files.column(PARTITION_VALUES).type == pa.struct([("p", pa.int32())])
    with pytest.raises(KeyError, match="nope"):
        snapshot.scan(columns=["nope"])


def test_the_snapshot_stays_as_it_was(written: str) -> None:
    snapshot = Table(written).snapshot()
    before = snapshot.files
    snapshot.scan(S.Compare("<", ID, S.Literal(5))).files  # noqa: B018 - computed for its effect, if any
    assert snapshot.files.equals(before) and PARTITION_VALUES not in snapshot.files.column_names


SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "day", "type": "date", "nullable": True, "metadata": {}},
        {"name": "at", "type": "timestamp", "nullable": True, "metadata": {}},
    ],
}
INLINE_DV = {
    "storageType": "i",
    "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f",
    "offset": None,
    "sizeInBytes": 12,
    "cardinality": 2,
}


def _hand_written_log(root: Path) -> str:
    """A log with typed partitions (date, timestamp), a file with a DV, one without stats, and one with a null partition."""
    log = root / "_delta_log"
    log.mkdir(parents=True)
    stats = json.dumps({"numRecords": 5, "minValues": {"id": 1}, "maxValues": {"id": 5}, "nullCount": {"id": 0}})
    actions = [
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
                "id": "scan-test",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(SCHEMA),
                "partitionColumns": ["day", "at"],
                "configuration": {"delta.enableDeletionVectors": "true"},
                "createdTime": 0,
            }
        },
        {
            "add": {
                "path": "a.parquet",
                "partitionValues": {"day": "2024-02-29", "at": "2024-02-29 10:00:00"},
                "size": 100,
                "modificationTime": 1,
                "dataChange": True,
                "stats": stats,
                "deletionVector": INLINE_DV,
            }
        },
        {
            "add": {
                "path": "b.parquet",
                "partitionValues": {"day": "2024-03-01", "at": "2024-03-01T00:00:00.000000Z"},
                "size": 200,
                "modificationTime": 2,
                "dataChange": True,
            }
        },
        {
            "add": {
                "path": "c.parquet",
                "partitionValues": {"day": None, "at": ""},
                "size": 300,
                "modificationTime": 3,
                "dataChange": True,
                "stats": json.dumps({"numRecords": 7}),
            }
        },
    ]
    (log / f"{0:020}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return str(root)


@pytest.fixture
def hand_written(tmp_path: Path) -> str:
    return _hand_written_log(tmp_path / "t")


def test_scan_files_carry_the_engine_columns(hand_written: str) -> None:
    files = Table(hand_written).snapshot().scan().files.sort_by("path")
    assert files.column("path").to_pylist() == ["a.parquet", "b.parquet", "c.parquet"]
    assert files.column("size").to_pylist() == [100, 200, 300]
    assert files.column("modificationTime").to_pylist() == [1, 2, 3]
    assert files.column(NUM_RECORDS).to_pylist() == [5, None, 7]
    utc = dt.UTC
    assert files.column(PARTITION_VALUES).to_pylist() == [
        {"day": dt.date(2024, 2, 29), "at": dt.datetime(2024, 2, 29, 10, tzinfo=utc)},
        {"day": dt.date(2024, 3, 1), "at": dt.datetime(2024, 3, 1, tzinfo=utc)},
        {"day": None, "at": None},
    ]


def test_deletion_vector_descriptors_are_columns(hand_written: str) -> None:
    files = Table(hand_written).snapshot().scan().files.sort_by("path")
    dvs = files.column("deletionVector").combine_chunks()
    assert dvs.is_valid().to_pylist() == [True, False, False]
    for name in ("storageType", "pathOrInlineDv", "sizeInBytes", "cardinality"):
        assert dvs.field(name).to_pylist()[0] == INLINE_DV[name]


def test_typed_partitions_prune_dates_and_timestamps(hand_written: str) -> None:
    snapshot = Table(hand_written).snapshot()
    day, at = S.Column(("day",)), S.Column(("at",))
    after_leap_day = snapshot.scan(S.Compare(">", day, S.Literal(dt.date(2024, 2, 29))))
    assert after_leap_day.files.column("path").to_pylist() == ["b.parquet"]
    morning = snapshot.scan(S.Compare("<", at, S.Literal(dt.datetime(2024, 2, 29, 12, tzinfo=dt.UTC))))
    assert morning.files.column("path").to_pylist() == ["a.parquet"]
    assert snapshot.scan(S.IsNull(day)).files.column("path").to_pylist() == ["c.parquet"]


def test_files_without_stats_are_kept_by_data_predicates(hand_written: str) -> None:
    scan = Table(hand_written).snapshot().scan(S.Compare(">", ID, S.Literal(100)))
    assert sorted(scan.files.column("path").to_pylist()) == ["b.parquet", "c.parquet"]


def test_file_actions_outside_a_scan_get_the_same_columns(hand_written: str) -> None:
    snapshot = Table(hand_written).snapshot()
    cdc = pa.table(
        {
            "path": ["_change_data/x.parquet"],
            "partitionValues": pa.array([[("day", "2024-01-01"), ("at", "")]], pa.map_(pa.string(), pa.string())),
        }
    )
    files = scan_files(cdc, snapshot.schema, snapshot.partition_columns)
    assert files.column(PARTITION_VALUES).to_pylist() == [{"day": dt.date(2024, 1, 1), "at": None}]
    assert files.column("deletionVector").null_count == 1 and files.column(NUM_RECORDS).to_pylist() == [None]


def test_num_records_reads_any_spelling_and_keeps_unknowns_null() -> None:
    stats = pa.array(
        [
            '{"numRecords":3}',
            '{"numRecords": 4, "minValues": {}}',
            None,
            "{}",
            '{"minValues":{"x":1}}',
            '{"minValues":{"numRecords":1},"numRecords":9}',  # a column named numRecords, then the count
        ]
    )
    assert num_records(stats).to_pylist() == [3, 4, None, None, None, 9]
    assert num_records(pa.array([], pa.string())).to_pylist() == []


def test_partition_keys_match_spellings_of_one_value(hand_written: str) -> None:
    snapshot = Table(hand_written).snapshot()
    keys = partition_keys(snapshot.scan().files.sort_by("path").column(PARTITION_VALUES)).to_pylist()
    spelled = pa.array([[("day", "2024-03-01"), ("at", "2024-03-01 00:00:00")]], pa.map_(pa.string(), pa.string()))
    other = partition_keys(
        scan_files(pa.table({"partitionValues": spelled}), snapshot.schema, snapshot.partition_columns)[PARTITION_VALUES]
    )
    assert other.to_pylist()[0] == keys[1] and len(set(keys)) == 3

"""Kernel rules a writer keeps when it changes metadata: protocol, properties, column mapping,
partition values and checkpoint stats. Expected protocols are written out from the spec's
tables ("Table Features", "Writer Version Requirements") and delta-spark's logs; data
read back is checked against delta-rs."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkdelta.kernel import AddFile, InvalidLogError, InvalidTableOperationError, Metadata, Protocol, Table
from sparkdelta.kernel import column_mapping as cm
from sparkdelta.kernel.checkpoint import write_checkpoint
from sparkdelta.kernel.errors import InvalidTablePropertyError, UnsupportedFeatureError
from sparkdelta.kernel.features import metadata_features
from sparkdelta.kernel.partitions import typed_partition_values
from sparkdelta.kernel.protocol import DEFAULT_PROTOCOL, required_protocol
from sparkdelta.kernel.schema import parse_schema
from sparkdelta.kernel.table_properties import normalize_properties


def _field(name: str, data_type: object, metadata: dict | None = None) -> dict:
    return {"name": name, "type": data_type, "nullable": True, "metadata": metadata or {}}


def _schema(*fields: dict) -> str:
    return json.dumps({"type": "struct", "fields": list(fields)})


ID_ONLY = _schema(_field("id", "long"))
NESTED = _schema(
    _field("id", "long"),
    _field("st", {"type": "struct", "fields": [_field("x", "integer"), _field("y", "string")]}),
    _field("arr", {"type": "array", "elementType": {"type": "struct", "fields": [_field("z", "integer")]}, "containsNull": True}),
    _field(
        "m",
        {
            "type": "map",
            "keyType": "string",
            "valueType": {"type": "struct", "fields": [_field("v", "double")]},
            "valueContainsNull": True,
        },
    ),
    _field("p", "string"),
)


def _metadata(config: dict[str, str] | None = None, schema: str = ID_ONLY, parts: tuple[str, ...] = ()) -> Metadata:
    return Metadata("table-id", schema, parts, config or {}, created_time=1)


def _log(table: Table, version: int) -> list[dict]:
    return [json.loads(line) for line in Path(table.log_dir, f"{version:020d}.json").read_text().splitlines()]


def _protocol_json(protocol: Protocol) -> dict:
    return protocol.to_dict()


def _in_log_order(expected: dict) -> dict:
    """Feature lists as the log holds them (sorted)."""
    return {k: sorted(v) if isinstance(v, list) else v for k, v in expected.items()}


LEGACY_2 = ["appendOnly", "invariants"]
R1W3 = {"minReaderVersion": 1, "minWriterVersion": 3}
R2W5 = {"minReaderVersion": 2, "minWriterVersion": 5}
WRITER_7 = {"minReaderVersion": 1, "minWriterVersion": 7}
LEGACY_4 = ["appendOnly", "changeDataFeed", "checkConstraints", "generatedColumns", "invariants"]

NEW_TABLES = [
    ({}, ID_ONLY, {"minReaderVersion": 1, "minWriterVersion": 2}),
    ({"delta.appendOnly": "true"}, ID_ONLY, {"minReaderVersion": 1, "minWriterVersion": 2}),
    ({"delta.constraints.positive": "id > 0"}, ID_ONLY, {"minReaderVersion": 1, "minWriterVersion": 3}),
    # As delta-spark 4.4 writes them: legacy versions only for a set some legacy protocol has exactly.
    ({"delta.enableChangeDataFeed": "true"}, ID_ONLY, {**WRITER_7, "writerFeatures": [*LEGACY_2, "changeDataFeed"]}),
    (
        {},
        _schema(_field("g", "long", {"delta.generationExpression": "1"})),
        {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": [*LEGACY_2, "generatedColumns"]},
    ),
    (
        {"delta.columnMapping.mode": "name"},
        ID_ONLY,
        {**WRITER_7, "minReaderVersion": 2, "writerFeatures": [*LEGACY_2, "columnMapping"]},
    ),
    ({"delta.minWriterVersion": "4", "delta.columnMapping.mode": "name"}, ID_ONLY, R2W5),
    ({"delta.minWriterVersion": "5"}, ID_ONLY, {"minReaderVersion": 1, "minWriterVersion": 4}),
    ({"delta.minReaderVersion": "2", "delta.minWriterVersion": "2"}, ID_ONLY, {"minReaderVersion": 1, "minWriterVersion": 2}),
    ({"delta.minWriterVersion": "7"}, ID_ONLY, {"minReaderVersion": 1, "minWriterVersion": 1}),
    (
        {"delta.minWriterVersion": "3", "delta.enableChangeDataFeed": "true"},
        ID_ONLY,
        {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": [*LEGACY_2, "changeDataFeed", "checkConstraints"]},
    ),
    (
        {"delta.ignoreProtocolDefaults": "true", "delta.enableChangeDataFeed": "true"},
        ID_ONLY,
        {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["changeDataFeed"]},
    ),
    (
        {"delta.enableDeletionVectors": "true"},
        ID_ONLY,
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": [*LEGACY_2, "deletionVectors"],
        },
    ),
    (
        {},
        _schema(_field("t", "timestamp_ntz")),
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["timestampNtz"],
            "writerFeatures": [*LEGACY_2, "timestampNtz"],
        },
    ),
    (
        {"delta.enableInCommitTimestamps": "true"},
        ID_ONLY,
        {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "inCommitTimestamp", "invariants"]},
    ),
    (
        {"delta.enableChangeDataFeed": "true", "delta.columnMapping.mode": "id"},
        _schema(_field("t", "timestamp_ntz")),
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["columnMapping", "timestampNtz"],
            "writerFeatures": ["appendOnly", "changeDataFeed", "columnMapping", "invariants", "timestampNtz"],
        },
    ),
    (
        {"delta.minReaderVersion": "3", "delta.minWriterVersion": "7"},
        ID_ONLY,
        {"minReaderVersion": 1, "minWriterVersion": 1},
    ),
    ({"delta.minWriterVersion": "4"}, ID_ONLY, {"minReaderVersion": 1, "minWriterVersion": 4}),
    (
        {"delta.feature.domainMetadata": "supported"},
        ID_ONLY,
        {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "domainMetadata", "invariants"]},
    ),
    ({"delta.ignoreProtocolDefaults": "true"}, ID_ONLY, {"minReaderVersion": 1, "minWriterVersion": 1}),
]


@pytest.mark.parametrize(("config", "schema", "expected"), NEW_TABLES, ids=[json.dumps(c[0]) + c[1][-40:] for c in NEW_TABLES])
def test_new_tables_get_the_lowest_protocol_their_features_need(config: dict, schema: str, expected: dict) -> None:
    assert _protocol_json(required_protocol(_metadata(config, schema), None)) == _in_log_order(expected)


UPGRADES = [
    # (current, config, schema, expected)
    (
        Protocol(1, 2),
        {"delta.enableChangeDataFeed": "true"},
        ID_ONLY,
        {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": [*LEGACY_2, "changeDataFeed"]},
    ),
    (Protocol(1, 2), {"delta.constraints.c": "id > 0"}, ID_ONLY, {"minReaderVersion": 1, "minWriterVersion": 3}),
    (Protocol(1, 7, None, frozenset(LEGACY_2)), {"delta.constraints.c": "id > 0"}, ID_ONLY, R1W3),
    (Protocol(1, 4), {"delta.minWriterVersion": "5", "delta.columnMapping.mode": "name"}, ID_ONLY, R2W5),
    (Protocol(1, 4), {"delta.columnMapping.mode": "name"}, ID_ONLY, {"minReaderVersion": 2, "minWriterVersion": 5}),
    # Moving to table features lists every feature the legacy version implied.
    (
        Protocol(1, 4),
        {"delta.enableDeletionVectors": "true"},
        ID_ONLY,
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": [*LEGACY_4, "deletionVectors"],
        },
    ),
    (
        Protocol(2, 5),
        {"delta.enableInCommitTimestamps": "true", "delta.columnMapping.mode": "name"},
        ID_ONLY,
        {
            "minReaderVersion": 2,
            "minWriterVersion": 7,
            "writerFeatures": sorted([*LEGACY_4, "columnMapping", "inCommitTimestamp"]),
        },
    ),
    (
        Protocol(2, 5),
        {"delta.columnMapping.mode": "name"},
        _schema(_field("t", "timestamp_ntz")),
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["columnMapping", "timestampNtz"],
            "writerFeatures": sorted([*LEGACY_4, "columnMapping", "timestampNtz"]),
        },
    ),
    (
        Protocol(1, 7, None, frozenset({"domainMetadata"})),
        {"delta.enableChangeDataFeed": "true"},
        ID_ONLY,
        {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["changeDataFeed", "domainMetadata"]},
    ),
]


@pytest.mark.parametrize(("current", "config", "schema", "expected"), UPGRADES)
def test_enabling_a_feature_upgrades_the_protocol(current: Protocol, config: dict, schema: str, expected: dict) -> None:
    assert _protocol_json(required_protocol(_metadata(config, schema), current)) == _in_log_order(expected)


@pytest.mark.parametrize(
    "current",
    [Protocol(1, 4), Protocol(2, 6), Protocol(3, 7, frozenset({"deletionVectors"}), frozenset({"deletionVectors"}))],
)
def test_a_protocol_that_suffices_is_kept_never_lowered(current: Protocol) -> None:
    assert required_protocol(_metadata(), current) is current
    assert required_protocol(_metadata({"delta.enableChangeDataFeed": "false"}), current) is current


def test_legacy_versions_asked_for_are_features_to_support() -> None:
    assert required_protocol(_metadata({"delta.minWriterVersion": "2"}), Protocol(1, 4)) == Protocol(1, 4)
    dv = Protocol(3, 7, frozenset({"deletionVectors"}), frozenset({"deletionVectors"}))
    upgraded = required_protocol(_metadata({"delta.minWriterVersion": "3"}), dv)
    assert _protocol_json(upgraded) == _in_log_order(
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["appendOnly", "checkConstraints", "deletionVectors", "invariants"],
        }
    )


def test_bad_protocol_properties_are_refused() -> None:
    with pytest.raises(InvalidTableOperationError, match="needs delta.minWriterVersion=7"):
        required_protocol(_metadata({"delta.minReaderVersion": "3"}), None)
    with pytest.raises(InvalidTableOperationError, match="delta.minWriterVersion must be an integer from 1 to 7"):
        required_protocol(_metadata({"delta.minWriterVersion": "9"}), None)
    with pytest.raises(UnsupportedFeatureError, match="not recognized by this version of Delta Lake: delta.feature.teleport"):
        required_protocol(_metadata({"delta.feature.teleport": "supported"}), None)
    with pytest.raises(InvalidTableOperationError, match="takes the value 'supported'"):
        required_protocol(_metadata({"delta.feature.domainMetadata": "on"}), None)


def test_metadata_features_see_nested_fields_and_types() -> None:
    schema = _schema(
        _field(
            "a",
            {"type": "array", "elementType": {"type": "struct", "fields": [_field("t", "timestamp_ntz")]}, "containsNull": True},
        ),
        _field("b", "long", {"delta.invariants": json.dumps({"expression": {"expression": "b > 0"}})}),
        _field("c", "long", {"delta.identity.start": 1, "delta.identity.step": 1}),
    )
    assert metadata_features(_metadata({"delta.enableChangeDataCapture": "true"}, schema)) == {
        "timestampNtz",
        "invariants",
        "identityColumns",
        "changeDataFeed",
    }


def _create(
    path: Path, config: dict[str, str] | None = None, schema: str = ID_ONLY, protocol: Protocol = DEFAULT_PROTOCOL
) -> Table:
    table = Table(str(path))
    table.transaction().commit([protocol, _metadata(config, schema)], "CREATE TABLE")
    return table


def test_a_metadata_commit_carries_the_protocol_upgrade_it_needs(tmp_path: Path) -> None:
    table = _create(tmp_path)
    metadata = table.snapshot().metadata
    ntz = Metadata(
        metadata.id, _schema(_field("id", "long"), _field("t", "timestamp_ntz")), (), {"delta.enableChangeDataFeed": "true"}
    )
    table.transaction().commit([ntz], "ADD COLUMNS")
    actions = _log(table, 1)
    protocols = [a["protocol"] for a in actions if "protocol" in a]
    assert protocols == [
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["timestampNtz"],
            "writerFeatures": ["appendOnly", "changeDataFeed", "invariants", "timestampNtz"],
        }
    ]
    assert deltalake.DeltaTable(str(tmp_path)).protocol().min_writer_version == 7
    # Properties that set the protocol never reach the stored configuration.
    table.transaction().commit(
        [Metadata(metadata.id, ID_ONLY, (), {"delta.feature.domainMetadata": "supported", "owner": "ops"})], "SET TBLPROPERTIES"
    )
    snapshot = table.snapshot()
    assert snapshot.configuration == {"owner": "ops"}
    assert "domainMetadata" in (snapshot.protocol.writer_features or frozenset())


def test_column_mapping_assigns_unique_ids_and_physical_names_to_every_field() -> None:
    assigned = cm.assign(_metadata({"delta.columnMapping.mode": "name"}, NESTED))
    fields = list(_all_fields(json.loads(assigned.schema_string)))
    ids = [f["metadata"]["delta.columnMapping.id"] for f in fields]
    names = [f["metadata"]["delta.columnMapping.physicalName"] for f in fields]
    assert sorted(ids) == list(range(1, len(fields) + 1)) and len(fields) == 9
    assert len(set(names)) == len(names) and all(n.startswith("col-") and len(n) == 40 for n in names)
    assert assigned.configuration["delta.columnMapping.maxColumnId"] == str(len(fields))
    # Assignment is stable, and new fields get ids above every id ever used.
    assert cm.assign(assigned).schema_string == assigned.schema_string
    grown = json.loads(assigned.schema_string)
    grown["fields"].append(_field("added", "long"))
    bumped = {**assigned.configuration, "delta.columnMapping.maxColumnId": "20"}
    again = cm.assign(Metadata("table-id", json.dumps(grown), (), bumped), previous=assigned)
    added = json.loads(again.schema_string)["fields"][-1]["metadata"]
    assert added["delta.columnMapping.id"] == 21 and again.configuration["delta.columnMapping.maxColumnId"] == "21"


def _all_fields(node: dict):
    if isinstance(node, dict) and node.get("type") == "struct":
        for field in node["fields"]:
            yield field
            yield from _all_fields(field["type"])
    elif isinstance(node, dict) and node.get("type") == "array":
        yield from _all_fields(node["elementType"])
    elif isinstance(node, dict) and node.get("type") == "map":
        yield from _all_fields(node["keyType"])
        yield from _all_fields(node["valueType"])


def test_turning_name_mapping_on_keeps_the_current_names_as_physical_names(tmp_path: Path) -> None:
    table = _create(tmp_path, schema=NESTED)
    metadata = table.snapshot().metadata
    table.transaction().commit(
        [Metadata(metadata.id, metadata.schema_string, (), {"delta.columnMapping.mode": "name"})], "SET TBLPROPERTIES"
    )
    snapshot = table.snapshot()
    expected = {"minReaderVersion": 2, "minWriterVersion": 7, "writerFeatures": sorted([*LEGACY_2, "columnMapping"])}
    assert _protocol_json(snapshot.protocol) == expected
    fields = list(_all_fields(json.loads(snapshot.metadata.schema_string)))
    assert [f["metadata"]["delta.columnMapping.physicalName"] for f in fields] == [f["name"] for f in fields]
    assert len({f["metadata"]["delta.columnMapping.id"] for f in fields}) == len(fields)


@pytest.mark.parametrize(
    ("before", "after", "words"),
    [
        ("none", "id", "from 'none' to 'id' is not supported"),
        ("name", "none", "from 'name' to 'none' is not supported"),
        ("name", "id", "from 'name' to 'id' is not supported"),
    ],
)
def test_column_mapping_mode_changes_other_than_none_to_name_are_refused(
    tmp_path: Path, before: str, after: str, words: str
) -> None:
    table = _create(tmp_path, {"delta.columnMapping.mode": before})
    metadata = table.snapshot().metadata
    changed = Metadata(metadata.id, metadata.schema_string, (), {**metadata.configuration, "delta.columnMapping.mode": after})
    with pytest.raises(InvalidTableOperationError, match=words):
        table.transaction().commit([changed], "SET TBLPROPERTIES")
    assert table.latest_version() == 0


def test_mapped_metadata_with_duplicate_ids_is_refused(tmp_path: Path) -> None:
    table = _create(tmp_path, {"delta.columnMapping.mode": "name"}, _schema(_field("a", "long"), _field("b", "long")))
    metadata = table.snapshot().metadata
    schema = json.loads(metadata.schema_string)
    schema["fields"][1]["metadata"]["delta.columnMapping.id"] = schema["fields"][0]["metadata"]["delta.columnMapping.id"]
    with pytest.raises(InvalidTableOperationError, match="column id 1 is used twice"):
        table.transaction().commit([Metadata(metadata.id, json.dumps(schema), (), metadata.configuration)], "CHANGE COLUMN")
    assert table.latest_version() == 0


def test_table_properties_are_spelled_canonically_and_validated() -> None:
    given = {"DELTA.ENABLECHANGEDATAFEED": "TRUE", "delta.logRetentionDuration": "interval 2 weeks", "owner": "ops"}
    assert normalize_properties(given, "t") == {
        "delta.enableChangeDataFeed": "TRUE",
        "delta.logRetentionDuration": "interval 2 weeks",
        "owner": "ops",
    }
    with pytest.raises(
        InvalidTablePropertyError, match="invalid value 'yes' for table property delta.appendOnly: it needs to be a boolean"
    ):
        normalize_properties({"delta.appendonly": "yes"}, "t")
    with pytest.raises(InvalidTablePropertyError, match="delta.checkpointInterval: it needs to be a positive integer"):
        normalize_properties({"delta.checkpointInterval": "0"}, "t")
    with pytest.raises(InvalidTablePropertyError, match="delta.columnMapping.mode: it needs to be none, name or id"):
        normalize_properties({"delta.columnMapping.mode": "position"}, "t")
    with pytest.raises(InvalidTablePropertyError, match="unknown configuration was specified: delta.enableChangeDataFed"):
        normalize_properties({"delta.enableChangeDataFed": "true"}, "t")
    with pytest.raises(InvalidTablePropertyError, match="delta.columnMapping.maxColumnId is managed by Delta"):
        normalize_properties({"delta.columnMapping.maxColumnId": "5"}, "t")
    assert normalize_properties({"delta.myTeam.flag": "x"}, "t", allow_arbitrary=True) == {"delta.myTeam.flag": "x"}


PARTITION_SCHEMA = parse_schema(
    _schema(
        _field("i", "integer"),
        _field("d", "date"),
        _field("dec", "decimal(5,2)"),
        _field("b", "boolean"),
        _field("ts", "timestamp"),
        _field("ntz", "timestamp_ntz"),
        _field("s", "string"),
    )
)
PARTITION_NAMES = ("i", "d", "dec", "b", "ts", "ntz", "s")


def _typed(rows: list[dict[str, str | None]]) -> list[dict]:
    values = pa.array([list(r.items()) for r in rows], pa.map_(pa.string(), pa.string()))
    return typed_partition_values(values, PARTITION_SCHEMA, PARTITION_NAMES).to_pylist()


def test_empty_partition_values_read_as_null_for_every_type() -> None:
    (row,) = _typed([{name: "" for name in PARTITION_NAMES}])
    assert row == {name: None for name in PARTITION_NAMES}


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2021-09-08 11:11:11", dt.datetime(2021, 9, 8, 11, 11, 11)),
        ("2021-09-08 11:11:11.5", dt.datetime(2021, 9, 8, 11, 11, 11, 500000)),
        ("2021-09-08T11:11:11.123456Z", dt.datetime(2021, 9, 8, 11, 11, 11, 123456)),
        ("2021-09-08T11:11:11.123456789Z", dt.datetime(2021, 9, 8, 11, 11, 11, 123456)),
        ("2021-09-08T11:11:11+02:00", dt.datetime(2021, 9, 8, 9, 11, 11)),
        ("2021-09-08T01:11:11.000-0530", dt.datetime(2021, 9, 8, 6, 41, 11)),
        ("2021-09-08T11:11Z", dt.datetime(2021, 9, 8, 11, 11)),
    ],
)
def test_timestamp_partition_values_in_the_forms_writers_use(text: str, utc: dt.datetime) -> None:
    (row,) = _typed([{"ts": text}])
    assert row["ts"] == utc.replace(tzinfo=dt.UTC)


def test_an_unparseable_timestamp_partition_value_is_an_error_not_a_null() -> None:
    with pytest.raises(InvalidLogError, match="cannot parse timestamp partition value 'yesterday'"):
        _typed([{"ts": "yesterday"}])


STATS_SCHEMA = _schema(
    _field("id", "long"),
    _field("ts", "timestamp"),
    _field("dec", "decimal(10,2)"),
    _field("st", {"type": "struct", "fields": [_field("s", "string")]}),
    _field("d", "date"),
)


def _table_with_stats(path: Path, config: dict[str, str]) -> tuple[Table, list[dict]]:
    table = Table(str(path))
    table.transaction().commit([Protocol(1, 2), _metadata(config, STATS_SCHEMA, ("d",))], "CREATE TABLE")
    stats = [
        {
            "numRecords": 3,
            "minValues": {"id": 1, "ts": "2024-01-01T00:00:00.000Z", "dec": 1.25, "st": {"s": "a"}},
            "maxValues": {"id": 9, "ts": "2024-01-02T10:00:00.000Z", "dec": 9.5, "st": {"s": "z"}},
            "nullCount": {"id": 0, "ts": 1, "dec": 0, "st": {"s": 2}},
        },
        {"numRecords": 1, "minValues": {"id": 20}, "maxValues": {"id": 20}, "nullCount": {"id": 0}},
    ]
    adds = [
        AddFile("d=2024-01-01/a.parquet", {"d": "2024-01-01"}, 10, 1, stats=json.dumps(stats[0])),
        AddFile("d=__HIVE_DEFAULT_PARTITION__/b.parquet", {"d": None}, 10, 1, stats=json.dumps(stats[1])),
    ]
    table.transaction().commit(adds, "WRITE")
    snapshot = table.snapshot()
    write_checkpoint(snapshot.storage, snapshot)
    return table, stats


def _checkpoint_adds(table: Table) -> list[dict]:
    checkpoint = pq.read_table(Path(table.log_dir, f"{1:020d}.checkpoint.parquet"))
    return sorted((a for a in checkpoint.column("add").to_pylist() if a), key=lambda a: a["path"])


def test_checkpoints_write_typed_stats_when_asked_and_readers_still_see_them(tmp_path: Path) -> None:
    config = {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"}
    table, stats = _table_with_stats(tmp_path, config)
    first, second = _checkpoint_adds(table)
    assert first["stats"] is None and second["stats"] is None
    assert first["partitionValues_parsed"] == {"d": dt.date(2024, 1, 1)} and second["partitionValues_parsed"] == {"d": None}
    parsed = first["stats_parsed"]
    assert parsed["numRecords"] == 3 and parsed["nullCount"] == {"id": 0, "ts": 1, "dec": 0, "st": {"s": 2}}
    assert parsed["minValues"]["ts"] == dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    assert parsed["maxValues"]["dec"] == pytest.approx(9.5) and str(parsed["maxValues"]["dec"]) == "9.50"
    assert parsed["maxValues"]["st"] == {"s": "z"}
    assert second["stats_parsed"]["minValues"] == {"id": 20, "ts": None, "dec": None, "st": None}
    # Both we and delta-rs start from this checkpoint (the JSON commits are gone) and see the stats.
    for commit in Path(table.log_dir).glob("*.json"):
        commit.unlink()
    ours = {r["path"]: json.loads(r["stats"]) for r in Table(str(tmp_path)).snapshot().files.to_pylist()}
    assert (
        ours["d=2024-01-01/a.parquet"]["maxValues"]["id"] == 9
        and ours["d=__HIVE_DEFAULT_PARTITION__/b.parquet"]["numRecords"] == 1
    )
    theirs = pa.table(deltalake.DeltaTable(str(tmp_path)).get_add_actions(flatten=True)).to_pylist()
    assert sorted((r["num_records"], r["min.id"], r["max.id"]) for r in theirs) == [(1, 20, 20), (3, 1, 9)]


def test_checkpoints_keep_json_stats_only_by_default(tmp_path: Path) -> None:
    table, stats = _table_with_stats(tmp_path, {})
    first, _ = _checkpoint_adds(table)
    assert json.loads(first["stats"]) == stats[0]
    assert "stats_parsed" not in first and "partitionValues_parsed" not in first


def test_typed_stats_use_physical_names_on_mapped_tables(tmp_path: Path) -> None:
    config = {"delta.columnMapping.mode": "name", "delta.checkpoint.writeStatsAsStruct": "true"}
    table = Table(str(tmp_path))
    table.transaction().commit([Protocol(1, 2), _metadata(config, _schema(_field("id", "long")))], "CREATE TABLE")
    physical = table.snapshot().schema.field("id").physical_name
    stats = {"numRecords": 2, "minValues": {physical: 4}, "maxValues": {physical: 5}, "nullCount": {physical: 0}}
    table.transaction().commit([AddFile("a.parquet", {}, 10, 1, stats=json.dumps(stats))], "WRITE")
    snapshot = table.snapshot()
    write_checkpoint(snapshot.storage, snapshot)
    (add,) = _checkpoint_adds(table)
    assert add["stats_parsed"]["maxValues"] == {physical: 5}

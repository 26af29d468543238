"""Typed reader/writer options (``DeltaOptions``), session settings (``spark/conf.py``), new-table
metadata built in one place (``kernel/create_table.py``) and read-only snapshots."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from sparkdelta.kernel import Protocol, Table
from sparkdelta.kernel.clustering import CLUSTERING_DOMAIN
from sparkdelta.kernel.create_table import create_table
from sparkdelta.kernel.schema import parse_schema
from sparkdelta.kernel.table_properties import InvalidTablePropertyError
from sparkdelta.spark import conf
from sparkdelta.spark.options import DeltaOptions

SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'


def test_options_are_parsed_once_into_typed_fields() -> None:
    options = DeltaOptions.parse(
        {
            "MERGESCHEMA": "True",
            "dataChange": False,
            "versionAsOf": "3",
            "txnAppId": "job",
            "txnVersion": 7,
            "partitionOverwriteMode": "DYNAMIC",
            "maxRecordsPerFile": "100",
            "timestampAsOf": "2024-01-31 12:00:00",
            "delta.constraints.Positive": "id > 0",
            "fs.s3a.endpoint": "http://minio:9000",
        }
    )
    assert options.merge_schema is True and options.data_change is False and options.overwrite_schema is False
    assert options.version_as_of == 3 and options.txn_app_id == "job" and options.txn_version == 7
    assert options.partition_overwrite_mode == "dynamic" and options.max_records_per_file == 100
    assert options.timestamp_as_of == "2024-01-31 12:00:00"
    assert dict(options.table_properties) == {"delta.constraints.Positive": "id > 0"}
    assert dict(options.storage) == {"fs.s3a.endpoint": "http://minio:9000"}
    assert DeltaOptions.parse({}) == DeltaOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.merge_schema = False  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"mergeSchema": "maybe"}, "mergeSchema"),
        ({"overwriteSchema": "yes"}, "overwriteSchema"),
        ({"dataChange": "0"}, "dataChange"),
        ({"versionAsOf": "abc"}, "versionAsOf"),
        ({"startingVersion": "1.5"}, "startingVersion"),
        ({"txnAppId": "job", "txnVersion": "-1"}, "txnVersion"),
        ({"partitionOverwriteMode": "sometimes"}, "partitionOverwriteMode"),
        ({"timestampAsOf": "yesterday"}, "timestampAsOf"),
        ({"maxRecordsPerFile": "many"}, "maxRecordsPerFile"),
    ],
)
def test_an_invalid_option_value_is_refused_naming_the_option(options: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=rf"\[DELTA_ILLEGAL_OPTION\] Invalid value '.*' for option '{named}'"):
        DeltaOptions.parse(options)


def test_idempotent_write_options_go_together() -> None:
    with pytest.raises(ValueError, match="DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS"):
        DeltaOptions.parse({"txnAppId": "job"})


def test_a_read_with_an_invalid_option_fails_naming_it(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    with pytest.raises(ValueError, match="option 'versionAsOf'"):
        spark.read.format("delta").option("versionAsOf", "abc").load(path)


def test_a_write_with_an_invalid_option_writes_nothing(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    with pytest.raises(ValueError, match="option 'mergeSchema'"):
        spark.range(3).write.format("delta").mode("append").option("mergeSchema", "maybe").save(path)
    assert Table(path).latest_version() == 0


def test_a_merge_schema_option_wins_over_the_session_setting(spark: SparkSession, tmp_path: Path) -> None:
    """As delta-spark's ``canMergeSchema``: the option, when given, decides; else the session."""
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    wider = spark.range(3).selectExpr("id", "id AS extra")
    spark.conf.set(conf.SCHEMA_AUTO_MERGE.key, "true")
    try:
        with pytest.raises(Exception, match="extra"):
            wider.write.format("delta").mode("append").option("mergeSchema", "false").save(path)
        wider.write.format("delta").mode("append").save(path)
    finally:
        spark.conf.unset(conf.SCHEMA_AUTO_MERGE.key)
    assert spark.read.format("delta").load(path).columns == ["id", "extra"]


def test_max_records_per_file_bounds_the_rows_of_each_written_file(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(10).coalesce(1).write.format("delta").option("maxRecordsPerFile", 3).save(path)
    counts = sorted(json.loads(s)["numRecords"] for s in Table(path).snapshot().files.column("stats").to_pylist())
    assert counts == [1, 3, 3, 3]


def test_session_settings_are_typed_and_refuse_a_bad_value_by_key(spark: SparkSession) -> None:
    assert conf.get_bool(spark, conf.RETENTION_DURATION_CHECK) is True
    assert conf.get_int(spark, conf.AUTO_COMPACT_MIN_FILES) == 50
    key = conf.RETENTION_DURATION_CHECK.key
    spark.conf.set(key, "maybe")
    try:
        with pytest.raises(ValueError, match=rf"{key} should be boolean, but was maybe"):
            conf.get_bool(spark, conf.RETENTION_DURATION_CHECK)
    finally:
        spark.conf.unset(key)


def test_a_new_table_gets_normalised_properties_the_protocol_they_need_and_its_clustering() -> None:
    new = create_table("t", SCHEMA, (), {"delta.appendonly": "true"}, clustering_columns=["id"], description="d")
    assert new.metadata.configuration == {"delta.appendOnly": "true"}
    assert new.metadata.description == "d" and new.metadata.schema == parse_schema(SCHEMA)
    assert "clustering" in (new.protocol.writer_features or frozenset())
    assert [type(a).__name__ for a in new.actions] == ["Protocol", "Metadata", "DomainMetadata"]
    assert new.actions[2].domain == CLUSTERING_DOMAIN  # type: ignore[union-attr]
    with pytest.raises(InvalidTablePropertyError, match="delta.appendOnly"):
        create_table("t", SCHEMA, (), {"delta.appendOnly": "sometimes"})


def test_a_new_table_never_lowers_a_given_protocol_and_keeps_inherited_configuration() -> None:
    source = Protocol(3, 7, frozenset({"deletionVectors"}), frozenset({"deletionVectors"}))
    new = create_table(
        "t", SCHEMA, (), {"delta.logRetentionDuration": "interval 2 days"}, inherited_configuration={"x.y": "1"}, protocol=source
    )
    assert new.protocol is source
    assert new.metadata.configuration == {"x.y": "1", "delta.logRetentionDuration": "interval 2 days"}
    assert new.metadata.created_time is not None and new.metadata.created_time <= int(datetime.now().timestamp() * 1000)


def test_a_snapshot_is_read_only(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    snapshot = Table(path).snapshot()
    for name in ("metadata", "protocol", "version", "table_root", "storage", "segment"):
        with pytest.raises(AttributeError):
            setattr(snapshot, name, None)

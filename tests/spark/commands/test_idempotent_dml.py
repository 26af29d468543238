"""Idempotent DML and writes: delta-spark's ``spark.databricks.delta.write.txnAppId`` / ``txnVersion``.

A DELETE, UPDATE, MERGE or DataFrame write run with both session settings commits a
``txn`` action for them, and is skipped (no commit, no result row) when the table already
holds that application at that version or a later one. The log is read as JSON here and
by delta-rs; one scripted sequence runs in sparkdelta and in delta-spark and must leave the
same versions, ``txn`` actions, results and rows after every step.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import deltalake
import pytest
from pyspark.sql import SparkSession

from sparkdelta.exceptions import DeltaIllegalArgumentException
from sparkdelta.kernel import Table
from sparkdelta.tables import DeltaTable

APP_ID = "spark.databricks.delta.write.txnAppId"
VERSION = "spark.databricks.delta.write.txnVersion"
AUTO_RESET = "spark.databricks.delta.write.txnVersion.autoReset.enabled"


@contextmanager
def settings(spark: SparkSession, **values: Any) -> Iterator[None]:
    """Session settings for the block (``app``, ``version``, ``auto_reset``), all unset after it."""
    keys = {"app": APP_ID, "version": VERSION, "auto_reset": AUTO_RESET}
    for name, value in values.items():
        spark.conf.set(keys[name], str(value))
    try:
        yield
    finally:
        for key in keys.values():
            spark.conf.unset(key)


def txns(path: str, version: int) -> list[dict[str, Any]]:
    """The ``txn`` actions of one commit, without their time."""
    lines = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    return [{k: v for k, v in json.loads(line)["txn"].items() if k != "lastUpdated"} for line in lines if '"txn"' in line]


def ids(spark: SparkSession, path: str) -> list[int]:
    return sorted(r.id for r in spark.read.format("delta").load(path).collect())


@pytest.fixture
def table(spark: SparkSession, tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    spark.range(6).write.format("delta").save(path)
    return path


def _delete(spark: SparkSession, path: str, key: int = 0) -> list[Any]:
    return spark.sql(f"DELETE FROM delta.`{path}` WHERE id = {key}").collect()


def _update(spark: SparkSession, path: str, key: int = 0) -> list[Any]:
    return spark.sql(f"UPDATE delta.`{path}` SET id = id + 10 WHERE id = {key}").collect()


def _merge(spark: SparkSession, path: str, key: int = 0) -> list[Any]:
    source = spark.range(key + 10, key + 11)
    target = DeltaTable.forPath(spark, path).alias("t")
    return target.merge(source.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute().collect()


@pytest.mark.parametrize(
    ("command", "after"),
    [(_delete, [1, 2, 3, 4, 5]), (_update, [1, 2, 3, 4, 5, 10]), (_merge, [0, 1, 2, 3, 4, 5, 10])],
    ids=["delete", "update", "merge"],
)
def test_dml_commits_the_session_txn_and_skips_a_replay(spark: SparkSession, table: str, command: Any, after: list[int]) -> None:
    with settings(spark, app="job", version=3):
        assert len(command(spark, table)) == 1
        assert Table(table).latest_version() == 1 and txns(table, 1) == [{"appId": "job", "version": 3}]
        assert deltalake.DeltaTable(table).transaction_version("job") == 3
        assert ids(spark, table) == after
        # The same batch again, or an older one, would change rows: it runs nothing, commits
        # nothing and returns no result row.
        for replay in (3, 2):
            spark.conf.set(VERSION, str(replay))
            assert command(spark, table, key=1) == []
            assert Table(table).latest_version() == 1 and ids(spark, table) == after
        spark.conf.set(VERSION, "4")
        assert len(command(spark, table, key=1)) == 1
        assert Table(table).latest_version() == 2 and txns(table, 2) == [{"appId": "job", "version": 4}]


def test_update_and_merge_record_the_txn_when_they_change_nothing_delete_does_not(spark: SparkSession, table: str) -> None:
    """delta-spark's UPDATE and MERGE put the ``txn`` before their (empty) actions and commit;
    its DELETE adds it only to actions it has."""
    with settings(spark, app="job", version=1):
        assert spark.sql(f"DELETE FROM delta.`{table}` WHERE id = 100").collect() == [(0,)]
        assert Table(table).latest_version() == 0
        assert spark.sql(f"UPDATE delta.`{table}` SET id = 0 WHERE id = 100").collect() == [(0,)]
        assert Table(table).latest_version() == 1 and txns(table, 1) == [{"appId": "job", "version": 1}]
        assert Table(table).read_commit_info(1)["operation"] == "UPDATE"
        spark.conf.set(VERSION, "2")
        target = DeltaTable.forPath(spark, table).alias("t")
        merged = target.merge(spark.range(3).alias("s"), "t.id = s.id").whenMatchedDelete("s.id > 100").execute()
        assert merged.collect() == [(0, 0, 0, 0)]
        assert Table(table).latest_version() == 2 and txns(table, 2) == [{"appId": "job", "version": 2}]
    assert ids(spark, table) == list(range(6))


def test_the_dataframe_api_delete_and_update_are_skipped_too(spark: SparkSession, table: str) -> None:
    delta = DeltaTable.forPath(spark, table)
    with settings(spark, app="job", version=1):
        delta.delete("id = 0")
        delta.update("id = 1", {"id": "100"})
        delta.delete()
    assert Table(table).latest_version() == 1 and ids(spark, table) == [1, 2, 3, 4, 5]


def test_auto_reset_unsets_the_version_once_a_command_used_it(spark: SparkSession, table: str) -> None:
    with settings(spark, app="job", version=1, auto_reset="true"):
        _update(spark, table)
        assert spark.conf.get(VERSION, None) is None
        assert spark.conf.get(APP_ID) == "job"
        spark.conf.set(VERSION, "1")
        assert _update(spark, table) == []  # skipped, and reset all the same
        assert spark.conf.get(VERSION, None) is None
        spark.conf.set(VERSION, "2")
        assert spark.sql(f"DELETE FROM delta.`{table}` WHERE id = 100").collect() == [(0,)]
        assert spark.conf.get(VERSION) == "2"  # no txn built: nothing to delete
        # A write's own options are never reset, nor do they reset the session's.
        spark.range(1).write.format("delta").mode("append").option("txnAppId", "other").option("txnVersion", 1).save(table)
        assert spark.conf.get(VERSION) == "2"
        spark.range(1).write.format("delta").mode("append").save(table)
        assert spark.conf.get(VERSION, None) is None
    assert [txns(table, v) for v in (1, 2, 3)] == [
        [{"appId": "job", "version": 1}],
        [{"appId": "other", "version": 1}],
        [{"appId": "job", "version": 2}],
    ]


@pytest.mark.parametrize("given", [{"app": "job"}, {"version": 1}], ids=["app id only", "version only"])
def test_one_setting_without_the_other_is_refused_before_anything_runs(
    spark: SparkSession, table: str, given: dict[str, Any]
) -> None:
    message = r"\[DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS\] .*Both spark.databricks.delta.write.txnAppId and"
    with settings(spark, **given):
        for run in (_delete, _update, _merge, lambda s, p: s.range(1).write.format("delta").mode("append").save(p)):
            with pytest.raises(DeltaIllegalArgumentException, match=message):
                run(spark, table)
        # Write options are complete on their own: the half-set session pair is not read.
        spark.range(1).write.format("delta").mode("append").option("txnAppId", "w").option("txnVersion", 1).save(table)
    assert Table(table).latest_version() == 1 and txns(table, 1) == [{"appId": "w", "version": 1}]


def test_a_version_that_is_not_a_number_is_refused_naming_the_setting(spark: SparkSession, table: str) -> None:
    with settings(spark, app="job", version="first"), pytest.raises(DeltaIllegalArgumentException, match=VERSION):
        _delete(spark, table)
    assert Table(table).latest_version() == 0


def test_write_options_win_over_the_session_settings(spark: SparkSession, table: str) -> None:
    """As delta-spark's ``getTxnVersionAndAppId``: options given, the session's pair is not used at all."""

    def append(**options: Any) -> None:
        spark.range(10, 11).write.format("delta").mode("append").options(**options).save(table)

    with settings(spark, app="job", version=5):
        append(txnAppId="other", txnVersion=1)
        assert txns(table, 1) == [{"appId": "other", "version": 1}]
        append()
        assert txns(table, 2) == [{"appId": "job", "version": 5}]
        append()  # the session's batch again
        append(txnAppId="other", txnVersion=1)  # the options' batch again
        assert Table(table).latest_version() == 2
        # Options naming a batch the table lacks run, though the session's is done.
        append(txnAppId="other", txnVersion=2)
        assert txns(table, 3) == [{"appId": "other", "version": 2}]
    assert ids(spark, table) == [0, 1, 2, 3, 4, 5, 10, 10, 10]
    assert deltalake.DeltaTable(table).transaction_version("job") == 5


def test_saveAsTable_and_insert_honour_the_session_settings(spark: SparkSession, tmp_path: Path) -> None:  # noqa: N802
    location = str(tmp_path / "named")
    with settings(spark, app="job", version=1):
        spark.range(3).write.format("delta").option("path", location).saveAsTable("idempotent_named")
        try:
            spark.sql("INSERT INTO idempotent_named VALUES (7)")
            spark.range(3).write.format("delta").mode("append").saveAsTable("idempotent_named")
            assert Table(location).latest_version() == 0 and txns(location, 0) == [{"appId": "job", "version": 1}]
            assert spark.table("idempotent_named").count() == 3
        finally:
            spark.sql("DROP TABLE idempotent_named")


# One sequence, run as it is by sparkdelta and by delta-spark: after each step, the step's
# result, the latest version, every application's version, the last commit's operation,
# the session's txnVersion and the table's rows.
SEQUENCE = r"""
import json, os

APP, VERSION, RESET, NOTE = (
    "spark.databricks.delta.write.txnAppId",
    "spark.databricks.delta.write.txnVersion",
    "spark.databricks.delta.write.txnVersion.autoReset.enabled",
    "spark.databricks.delta.commitInfo.userMetadata",
)


def state():
    log = os.path.join(path, "_delta_log")
    versions = sorted(int(name[:20]) for name in os.listdir(log) if name.endswith(".json"))
    applications, info = {}, {}
    for version in versions:
        for line in open(os.path.join(log, f"{version:020d}.json")):
            action = json.loads(line)
            if "txn" in action:
                applications[action["txn"]["appId"]] = action["txn"]["version"]
            info = action.get("commitInfo", info)
    ids = sorted(r[0] for r in spark.read.format("delta").load(path).collect())
    note = info.get("userMetadata")
    return versions[-1], applications, info.get("operation"), note, spark.conf.get(VERSION, None), ids


def sql(text):
    return [tuple(r) for r in spark.sql(text.format(t=f"delta.`{path}`")).collect()]


def merge(low, high):
    source = spark.range(low, high).alias("s")
    target = DeltaTable.forPath(spark, path).alias("t")
    return [tuple(r) for r in target.merge(source, "t.id = s.id").whenNotMatchedInsertAll().execute().collect()]


def append(low, **options):
    writer = spark.range(low, low + 1).write.format("delta").mode("append")
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(path)


steps = [
    ("create", lambda: spark.range(6).write.format("delta").save(path)),
    ("settings", lambda: (spark.conf.set(APP, "job"), spark.conf.set(VERSION, "1"))),
    ("delete", lambda: sql("DELETE FROM {t} WHERE id = 0")),
    ("delete again", lambda: sql("DELETE FROM {t} WHERE id = 1")),
    ("version 2", lambda: spark.conf.set(VERSION, "2")),
    ("delete nothing", lambda: sql("DELETE FROM {t} WHERE id = 100")),
    ("update nothing", lambda: sql("UPDATE {t} SET id = 7 WHERE id = 100")),
    ("version 3", lambda: spark.conf.set(VERSION, "3")),
    ("merge", lambda: merge(4, 8)),
    ("merge again", lambda: merge(8, 9)),
    ("merge sql again", lambda: sql("MERGE INTO {t} t USING (SELECT 100 AS id) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")),
    ("older", lambda: (spark.conf.set(VERSION, "0"), sql("UPDATE {t} SET id = 50 WHERE id = 2"))[1]),
    ("version 4", lambda: spark.conf.set(VERSION, "4")),
    ("append", lambda: append(20)),
    ("append again", lambda: append(21)),
    ("append with options", lambda: append(22, txnAppId="other", txnVersion="1")),
    ("auto reset", lambda: (spark.conf.set(RESET, "true"), spark.conf.set(VERSION, "5"))),
    ("update", lambda: sql("UPDATE {t} SET id = 30 WHERE id = 20")),
    ("update again", lambda: (spark.conf.set(VERSION, "5"), sql("UPDATE {t} SET id = 31 WHERE id = 30"))[1]),
    ("delete nothing, kept", lambda: (spark.conf.set(VERSION, "6"), sql("DELETE FROM {t} WHERE id = 100"))[1]),
    ("options, kept", lambda: append(23, txnAppId="other", txnVersion="2")),
    ("note", lambda: spark.conf.set(NOTE, "nightly fix")),
    ("delete, reset, noted", lambda: sql("DELETE FROM {t} WHERE id = 23")),
]
result = []
try:
    for name, step in steps:
        try:
            outcome = step()
        except Exception as error:
            outcome = f"error: {error!r}"
        result.append((name, outcome if isinstance(outcome, (list, str)) else None, state()))
    spark.conf.unset(RESET)
    spark.conf.unset(VERSION)
    try:
        sql("DELETE FROM {t} WHERE id = 3")
        result.append(("app id alone", "no error"))
    except Exception as error:
        result.append(("app id alone", "DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS" in str(error)))
finally:
    for key in (APP, VERSION, RESET, NOTE):
        spark.conf.unset(key)
"""


def test_a_sequence_of_idempotent_commands_matches_delta_spark(spark: SparkSession, deltaspark: Any, tmp_path: Path) -> None:
    ours: dict[str, Any] = {"spark": spark, "DeltaTable": DeltaTable, "path": str(tmp_path / "ours")}
    exec(SEQUENCE, ours)  # noqa: S102 - the test's own script
    theirs = deltaspark.answer(SEQUENCE, tmp_path / "theirs")
    assert ours["result"][-1] == ("app id alone", True)
    assert [step[2][0] for step in ours["result"][:-1]] == [0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3, 3, 3, 4, 4, 5, 5, 6, 6, 6, 7, 7, 8]
    assert ours["result"][-2][2][3] == "nightly fix"
    for mine, reference in zip(ours["result"], theirs, strict=True):
        assert mine == reference, mine[0]

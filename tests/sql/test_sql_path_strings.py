"""A table named by a quoted path (``VACUUM '/path'``), where delta-spark's grammar takes one.

``DeltaSqlBase.g4`` allows ``path=stringLit | table=qualifiedName`` in VACUUM, DESCRIBE
HISTORY, DESCRIBE DETAIL and OPTIMIZE; GENERATE, RESTORE, CONVERT TO DELTA and REORG take a
name only. Oracle: delta-spark (``tests/deltaspark.py``) runs every statement too, on the
same table where it only reads and on its own copy where it writes: each statement must be
accepted or refused by both, and answer alike.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deltaspark import DeltaSpark, plain
from pyspark.sql import DataFrame, SparkSession

RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"

# What each answer is compared on: the columns both implementations define alike.
HISTORY = ("version", "operation", "readVersion", "isBlindAppend")
DETAIL = ("format", "id", "partitionColumns", "numFiles", "sizeInBytes", "minReaderVersion", "minWriterVersion")

READS: dict[str, tuple[str, ...]] = {
    "DESCRIBE HISTORY '{path}'": HISTORY,
    "DESC HISTORY '{path}' LIMIT 2": HISTORY,
    "DESCRIBE DETAIL '{path}'": DETAIL,
    'DESC DETAIL "{path}"': DETAIL,
    "DESCRIBE DETAIL '{head}' '{tail}'": DETAIL,  # adjacent literals are one, as Spark reads them
    "VACUUM '{path}' RETAIN 0 HOURS DRY RUN": ("path",),
    "VACUUM '{path}' DRY RUN": ("path",),
}
WRITES: dict[str, tuple[str, ...]] = {
    "OPTIMIZE '{path}' WHERE p = 1": ("metrics.numFilesAdded", "metrics.numFilesRemoved"),
    "OPTIMIZE '{path}' ZORDER BY (id)": ("metrics.numFilesAdded", "metrics.numFilesRemoved"),
    "VACUUM '{path}' RETAIN 200 HOURS": (),
    "VACUUM '{path}'": (),
}
REFUSED = (
    "GENERATE symlink_format_manifest FOR TABLE '{path}'",
    "RESTORE TABLE '{path}' TO VERSION AS OF 0",
    "CONVERT TO DELTA '{path}'",
    "REORG TABLE '{path}' APPLY (PURGE)",
)

# delta-spark's side: the statement's answer on the columns asked for, or its error class.
THEIRS = """
import re
spark.conf.set(check, "false")
try:
    frame = spark.sql(statement)
    rows_ = frame.select(*columns).collect() if columns else frame.collect()
    result = ("ok", sorted((plain(tuple(r)) for r in rows_), key=repr) if columns else None)
except Exception as error:
    condition = getattr(error, "getCondition", None)
    result = ("error", condition() if callable(condition) else type(error).__name__)
finally:
    spark.conf.unset(check)
"""


def ours(spark: SparkSession, statement: str, columns: tuple[str, ...]) -> tuple[str, Any]:
    spark.conf.set(RETENTION_CHECK, "false")
    try:
        frame: DataFrame = spark.sql(statement)
        rows = frame.select(*columns).collect() if columns else frame.collect()
        return "ok", sorted((plain(tuple(r)) for r in rows), key=repr) if columns else None
    except Exception as error:  # noqa: BLE001 - the class is what is compared
        condition: Callable[[], str | None] | None = getattr(error, "getCondition", None)
        return "error", condition() if callable(condition) else type(error).__name__
    finally:
        spark.conf.unset(RETENTION_CHECK)


def theirs(deltaspark: DeltaSpark, statement: str, columns: tuple[str, ...]) -> tuple[str, Any]:
    return deltaspark.run(THEIRS, statement=statement, columns=list(columns), check=RETENTION_CHECK)


@pytest.fixture(scope="module")
def table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A partitioned table of several files, with removed files for VACUUM to list."""
    path = tmp_path_factory.mktemp("paths") / "a table"
    rows = spark.range(0, 40, 1, 4).selectExpr("CAST(id AS INT) AS id", "CAST(id % 2 AS INT) AS p")
    rows.write.format("delta").partitionBy("p").save(str(path))
    spark.range(40, 60, 1, 2).selectExpr("CAST(id AS INT) AS id", "CAST(id % 2 AS INT) AS p").write.format("delta").mode(
        "append"
    ).save(str(path))
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id < 5")
    return path


@pytest.mark.parametrize("statement", sorted(READS))
def test_reads_by_quoted_path_answer_as_delta_spark(
    spark: SparkSession, deltaspark: DeltaSpark, table: Path, statement: str
) -> None:
    text = statement.format(path=table, head=str(table)[:5], tail=str(table)[5:])
    answer = ours(spark, text, READS[statement])
    assert answer[0] == "ok", answer
    assert answer == theirs(deltaspark, text, READS[statement])


@pytest.mark.parametrize("statement", sorted(WRITES))
def test_writes_by_quoted_path_answer_as_delta_spark(
    spark: SparkSession, deltaspark: DeltaSpark, table: Path, tmp_path: Path, statement: str
) -> None:
    mine, other = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(table, mine)
    shutil.copytree(table, other)
    answer = ours(spark, statement.format(path=mine), WRITES[statement])
    assert answer[0] == "ok", answer
    assert answer == theirs(deltaspark, statement.format(path=other), WRITES[statement])


@pytest.mark.parametrize("statement", REFUSED)
def test_statements_without_a_path_form_are_refused_as_delta_spark_refuses_them(
    spark: SparkSession, deltaspark: DeltaSpark, table: Path, statement: str
) -> None:
    text = statement.format(path=table)
    answer = ours(spark, text, ())
    assert answer == ("error", "PARSE_SYNTAX_ERROR")
    assert answer == theirs(deltaspark, text, ())

"""Errors as delta-spark raises them: ``except AnalysisException`` catches sparkdelta's analysis
errors through every surface (DeltaTable, DataFrameReader/Writer, SQL), each with
delta-spark's error class; the commit conflicts go by delta-spark's Python names; and the
errors live in one home (``kernel/errors.py`` for the kernel, ``sparkdelta/exceptions.py``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException, IllegalArgumentException, PySparkException, UnsupportedOperationException
from pyspark.sql import SparkSession

from sparkdelta import exceptions
from sparkdelta.exceptions import (
    ConcurrentAppendException,
    ConcurrentDeleteReadException,
    DeltaAnalysisException,
    DeltaConcurrentModificationException,
    TableNotFoundError,
    VacuumRetentionError,
    VersionNotFoundError,
)
from sparkdelta.kernel import AddFile, Table
from sparkdelta.tables import DeltaTable

SRC = Path(__file__).resolve().parent.parent / "src" / "sparkdelta"
# The library's two homes, and the lakehouse app's own.
ERROR_HOMES = {SRC / "kernel" / "errors.py", SRC / "exceptions.py", SRC / "lakehouse" / "errors.py"}


@pytest.fixture
def table(spark: SparkSession, tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    spark.range(3).selectExpr("id", "id % 2 AS part").write.format("delta").partitionBy("part").save(path)
    return path


def _condition(action: Callable[[], object], expected: type[BaseException] = AnalysisException) -> str | None:
    with pytest.raises(expected) as raised:
        action()
    assert isinstance(raised.value, PySparkException)
    condition = raised.value.getCondition()
    assert str(raised.value).startswith(f"[{condition}] ")
    return condition


def test_delta_table_api_raises_analysis_exceptions(spark: SparkSession, table: str, tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    assert _condition(lambda: DeltaTable.forPath(spark, missing)) == "DELTA_MISSING_DELTA_TABLE"
    assert _condition(lambda: DeltaTable.forName(spark, "no_such_table")) == "DELTA_MISSING_DELTA_TABLE"
    target = DeltaTable.forPath(spark, table)
    assert _condition(lambda: target.restoreToVersion(7)) == "DELTA_VERSION_NOT_FOUND"
    unresolved = (
        target.alias("t").merge(spark.range(1).toDF("id").alias("s"), "t.id = s.id").whenMatchedUpdate(set={"nope": "s.id"})
    )
    with pytest.raises(AnalysisException, match="Cannot resolve nope"):
        unresolved.execute()
    assert _condition(lambda: target.optimize().where("id = 1").executeCompaction()) == "DELTA_NON_PARTITION_COLUMN_REFERENCE"
    assert _condition(lambda: target.merge(spark.range(1), "true").execute()) == "DELTA_MERGE_MISSING_WHEN"


def test_kernel_errors_keep_their_own_names(spark: SparkSession, table: str, tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        DeltaTable.forPath(spark, str(tmp_path / "missing"))
    with pytest.raises(VersionNotFoundError) as raised:
        spark.read.format("delta").option("versionAsOf", 9).load(table)
    assert isinstance(raised.value, AnalysisException) and isinstance(raised.value, ValueError)


def test_reader_and_writer_raise_analysis_exceptions(spark: SparkSession, table: str, tmp_path: Path) -> None:
    reader = spark.read.format("delta")
    assert _condition(lambda: reader.load(str(tmp_path / "missing"))) == "DELTA_TABLE_NOT_FOUND"
    assert _condition(lambda: reader.option("versionAsOf", 9).load(table)) == "DELTA_VERSION_NOT_FOUND"
    both = reader.option("versionAsOf", 0).option("timestampAsOf", "2020-01-01")
    assert _condition(lambda: both.load(table)) == "DELTA_UNSUPPORTED_TIME_TRAVEL_MULTIPLE_FORMATS"
    assert _condition(lambda: spark.range(1).write.format("delta").save(table)) == "DELTA_PATH_EXISTS"
    mismatched = spark.range(1).selectExpr("CAST(id AS STRING) AS id", "0L AS part").write.format("delta").mode("append")
    assert _condition(lambda: mismatched.save(table)) == "DELTA_METADATA_MISMATCH"
    unknown = spark.range(1).write.format("delta").option("delta.noSuchProperty", "1").mode("append")
    assert _condition(lambda: unknown.save(table)) == "DELTA_UNKNOWN_CONFIGURATION"


def test_sql_raises_analysis_exceptions(spark: SparkSession, table: str, tmp_path: Path) -> None:
    assert _condition(lambda: spark.sql(f"SELECT * FROM delta.`{table}` VERSION AS OF 9").collect()) == "DELTA_VERSION_NOT_FOUND"
    assert _condition(lambda: spark.sql(f"ALTER TABLE delta.`{table}` DROP CONSTRAINT nope")) == "DELTA_CONSTRAINT_DOES_NOT_EXIST"
    assert _condition(lambda: spark.sql(f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ('delta.nope' = '1')")) == (
        "DELTA_UNKNOWN_CONFIGURATION"
    )
    with pytest.raises(AnalysisException):
        spark.sql(f"VACUUM delta.`{tmp_path / 'missing'}`")


def test_illegal_arguments_and_unsupported_operations(spark: SparkSession, table: str) -> None:
    target = DeltaTable.forPath(spark, table)
    condition = _condition(lambda: target.vacuum(0.0), IllegalArgumentException)
    assert condition == "DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT"
    with pytest.raises(VacuumRetentionError):
        target.vacuum(0.0)
    spark.sql(f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ('delta.appendOnly' = 'true')")
    assert _condition(lambda: target.delete("id = 1"), UnsupportedOperationException) == "DELTA_CANNOT_MODIFY_APPEND_ONLY"


def test_concurrency_classes_go_by_delta_spark_names(tmp_path: Path, spark: SparkSession) -> None:
    assert issubclass(ConcurrentAppendException, DeltaConcurrentModificationException)
    for name in (
        "ConcurrentWriteException",
        "MetadataChangedException",
        "ProtocolChangedException",
        "ConcurrentAppendException",
        "ConcurrentDeleteReadException",
        "ConcurrentDeleteDeleteException",
        "ConcurrentTransactionException",
    ):
        cls = getattr(exceptions, name)
        assert issubclass(cls, DeltaConcurrentModificationException)
        assert cls("x").getCondition().startswith("DELTA_")
    path = str(tmp_path / "c")
    spark.range(2).write.format("delta").save(path)
    reading = Table(path).transaction()
    reading.mark_read_whole_table()
    DeltaTable.forPath(spark, path).delete("id = 0")
    with pytest.raises(ConcurrentDeleteReadException) as raised:
        reading.commit([AddFile("x.parquet", {}, 1, 0)], "WRITE")
    assert raised.value.getCondition() == "DELTA_CONCURRENT_DELETE_READ"


def test_errors_are_defined_in_their_one_home() -> None:
    """No module under src defines an exception class outside kernel/errors.py and exceptions.py (the app: lakehouse/errors.py)."""
    error_bases = {"Exception", "BaseException", "ValueError", "TypeError", "RuntimeError", "OSError"}
    strays = []
    for path in sorted(SRC.rglob("*.py")):
        if path in ERROR_HOMES:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = {b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases}
                if bases & error_bases or any(b.endswith(("Error", "Exception")) for b in bases):
                    strays.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}")
    assert not strays, strays


def test_analysis_exception_is_a_value_error_with_its_class() -> None:
    error = DeltaAnalysisException("a message", errorClass="DELTA_X")
    assert isinstance(error, ValueError) and error.getCondition() == "DELTA_X"
    assert str(error) == error.getMessage() == "[DELTA_X] a message"
    assert str(DeltaAnalysisException("plain")) == "plain"

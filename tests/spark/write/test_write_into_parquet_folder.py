"""No table is created over a folder of plain Parquet data (issue 12, finding 7): not by a
write, the table builder, SQL CREATE or CLONE.

Creating the log there would hide the folder's rows from every reader and let VACUUM
delete them as unreferenced files; the write is refused, pointing to CONVERT TO DELTA.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from sparkdelta.exceptions import CloneTargetExistsError, DeltaAnalysisException, DeltaError
from sparkdelta.tables import DeltaTable


def _parquet_folder(spark: SparkSession, path: Path) -> list[tuple[int, str]]:
    rows = [(i, f"r{i}") for i in range(10)]
    spark.createDataFrame(rows, "id INT, v STRING").write.partitionBy("v").parquet(str(path))
    return rows


def _folder_rows(path: Path) -> list[tuple[int, str]]:
    table = pq.read_table(str(path))
    return sorted(zip(table.column("id").to_pylist(), (str(v) for v in table.column("v").to_pylist()), strict=True))


@pytest.mark.parametrize("mode", ["append", "overwrite", "errorifexists", "ignore"])
def test_delta_write_into_a_parquet_folder_is_refused(spark: SparkSession, tmp_path: Path, mode: str) -> None:
    folder = tmp_path / "legacy"
    rows = _parquet_folder(spark, folder)
    new = spark.createDataFrame([(99, "x")], "id INT, v STRING")
    with pytest.raises(DeltaAnalysisException, match=r"not a Delta table but holds data files.*CONVERT TO DELTA"):
        new.write.format("delta").mode(mode).save(str(folder))
    assert not (folder / "_delta_log").exists()
    assert _folder_rows(folder) == rows


def test_the_folder_converts_and_then_takes_writes(spark: SparkSession, tmp_path: Path) -> None:
    folder = tmp_path / "legacy"
    rows = _parquet_folder(spark, folder)
    DeltaTable.convertToDelta(spark, f"parquet.`{folder}`", "v STRING")
    spark.createDataFrame([(99, "x")], "id INT, v STRING").write.format("delta").mode("append").save(str(folder))
    read = sorted((r.id, r.v) for r in spark.read.format("delta").load(str(folder)).collect())
    assert read == sorted([*rows, (99, "x")])


def test_hidden_files_do_not_count_as_data(spark: SparkSession, tmp_path: Path) -> None:
    """Spark's own markers (``_SUCCESS``, ``.crc``) leave a folder empty of data."""
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / ".part.crc").write_bytes(b"")
    spark.createDataFrame([(1, "a")], "id INT, v STRING").write.format("delta").save(str(folder))
    assert [(r.id, r.v) for r in spark.read.format("delta").load(str(folder)).collect()] == [(1, "a")]


CREATORS = {
    "builder": lambda spark, path: DeltaTable.create(spark).location(path).addColumn("id", "INT").execute(),
    "builder_or_replace": lambda spark, path: DeltaTable.createOrReplace(spark).location(path).addColumn("id", "INT").execute(),
    "sql_create": lambda spark, path: spark.sql(f"CREATE TABLE delta.`{path}` (id INT, v STRING) USING delta"),
    "sql_ctas": lambda spark, path: spark.sql(f"CREATE TABLE delta.`{path}` USING delta AS SELECT 1 AS id, 'a' AS v"),
}


@pytest.mark.parametrize("creator", CREATORS)
def test_no_table_is_created_over_a_parquet_folder(spark: SparkSession, tmp_path: Path, creator: str) -> None:
    folder = tmp_path / "legacy"
    rows = _parquet_folder(spark, folder)
    with pytest.raises(DeltaError, match=r"not a Delta table but holds data files.*CONVERT TO DELTA"):
        CREATORS[creator](spark, str(folder))
    assert not (folder / "_delta_log").exists()
    assert _folder_rows(folder) == rows


def test_no_clone_lands_on_a_parquet_folder(spark: SparkSession, tmp_path: Path) -> None:
    source, folder = tmp_path / "source", tmp_path / "legacy"
    spark.createDataFrame([(1, "a")], "id INT, v STRING").write.format("delta").save(str(source))
    rows = _parquet_folder(spark, folder)
    for shallow in (True, False):
        with pytest.raises(CloneTargetExistsError, match="not a Delta table but holds data files"):
            DeltaTable.forPath(spark, str(source)).clone(str(folder), isShallow=shallow)
    assert not (folder / "_delta_log").exists()
    assert _folder_rows(folder) == rows

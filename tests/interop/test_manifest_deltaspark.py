"""Symlink format manifests against delta-spark, the reference implementation (``tests/deltaspark.py``).

Data file names are random, so the two never write the same table: one implementation
writes a table, it is copied, and each generates manifests on its own copy of the same
files. The manifests must then be equal, their lines read relative to each copy's root
(both write ``file:<root>/<data file>``). Automatic manifests
(``delta.compatibility.symlinkFormatManifest.enabled``) are checked after every commit of a
script against the other implementation's full generation on a copy of the table at that
point, both ways round. Refusals must carry delta-spark's error class, and neither
implementation's generation is a commit.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from deltaspark import DeltaSpark
from pyspark.sql import SparkSession

from sparkdelta.kernel import Table
from sparkdelta.tables import DeltaTable

MANIFEST_DIR = "_symlink_format_manifest"
ENABLED = "delta.compatibility.symlinkFormatManifest.enabled"

SCRIPTS: dict[str, tuple[str, ...]] = {
    "unpartitioned": (
        "CREATE TABLE {t} (id INT, v STRING) USING delta",
        "INSERT INTO {t} SELECT CAST(id AS INT), CAST(id AS STRING) FROM range(0, 50, 1, 3)",
        "INSERT INTO {t} VALUES (100, 'x')",
        "DELETE FROM {t} WHERE id < 10",
        "UPDATE {t} SET v = 'u' WHERE id = 100",
        "DELETE FROM {t}",
        "INSERT INTO {t} VALUES (7, 'again')",
    ),
    "partitioned": (
        "CREATE TABLE {t} (id INT, p STRING, q INT) USING delta PARTITIONED BY (p, q)",
        "INSERT INTO {t} VALUES (1,'a',1),(2,'b',1),(3,NULL,2),(4,'a b/c=d%',1),(5,'',3),(6,'é:x',NULL),(7,'$0$',1)",
        "INSERT INTO {t} VALUES (8,'a',1),(9,'c',2)",
        "UPDATE {t} SET p = 'moved' WHERE id = 2",
        "DELETE FROM {t} WHERE p = 'c'",
        "DELETE FROM {t} WHERE p = 'a'",
        "INSERT OVERWRITE {t} VALUES (10,'z',9)",
        "INSERT INTO {t} VALUES (11,'y',8),(12,'z',9)",
    ),
}

GENERATE = 'DeltaTable.forPath(spark, path).generate("symlink_format_manifest")'

# Run on delta-spark's side: the statement's error class (or None), as delta-spark's Python sees it.
TRY = """
import re
try:
    exec(snippet, {"spark": spark, "DeltaTable": DeltaTable, "path": path, "sql": sql})
    result = None
except Exception as error:
    condition = getattr(error, "getCondition", None)
    found = condition() if callable(condition) else None
    if not found:
        match = re.search(r"\\[([A-Z_]+(?:\\.[A-Z_]+)?)\\]", str(error))
        found = match.group(1) if match else type(error).__name__
    result = found
"""


def manifests(root: Path) -> dict[str, list[str]]:
    """Relative manifest directory -> its lines relative to ``root``, each checked to name a
    file under it as ``file:<root>/...``."""
    prefix = f"file:{root}/"
    found: dict[str, list[str]] = {}
    for manifest in (root / MANIFEST_DIR).rglob("manifest"):
        relative = manifest.parent.relative_to(root / MANIFEST_DIR).as_posix()
        lines = manifest.read_text().splitlines()
        assert all(line.startswith(prefix) for line in lines), lines
        found["" if relative == "." else relative] = sorted(line[len(prefix) :] for line in lines)
    return found


def copy_table(source: Path, target: Path, with_manifests: bool = True) -> Path:
    shutil.copytree(source, target)
    if not with_manifests:
        shutil.rmtree(target / MANIFEST_DIR, ignore_errors=True)
    return target


def ours_generate(spark: SparkSession, path: Path) -> None:
    DeltaTable.forPath(spark, str(path)).generate("symlink_format_manifest")


def theirs_generate(deltaspark: DeltaSpark, path: Path) -> None:
    deltaspark.run(GENERATE, path=str(path))


def ours_condition(spark: SparkSession, action: Callable[[], object]) -> str | None:
    try:
        action()
    except Exception as error:  # noqa: BLE001 - the class is what is compared
        return getattr(error, "getCondition", lambda: None)() or type(error).__name__
    return None


def theirs_condition(deltaspark: DeltaSpark, code: str, path: Path, sql: str = "") -> str | None:
    return deltaspark.run(TRY, snippet=code, path=str(path), sql=sql)


def writers(spark: SparkSession, deltaspark: DeltaSpark) -> dict[str, Callable[[str], object]]:
    return {"sparkdelta": spark.sql, "delta-spark": lambda sql: deltaspark.run("spark.sql(sql)", sql=sql)}


@pytest.mark.parametrize("writer", ["sparkdelta", "delta-spark"])
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_full_generation_equals_delta_spark(
    spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path, script: str, writer: str
) -> None:
    """Manifests generated part way through, then again at the end (stale partitions deleted):
    sparkdelta's and delta-spark's, each on its copy of one table, are the same."""
    table = tmp_path / "table"
    run = writers(spark, deltaspark)[writer]
    statements = SCRIPTS[script]
    half = len(statements) // 2
    for statement in statements[:half]:
        run(statement.format(t=f"delta.`{table}`"))
    ours_generate(spark, table)  # stale manifests to start from, the same on both copies
    for statement in statements[half:]:
        run(statement.format(t=f"delta.`{table}`"))
    theirs = copy_table(table, tmp_path / "theirs")
    version = Table(str(table)).latest_version()

    ours_generate(spark, table)
    theirs_generate(deltaspark, theirs)

    assert manifests(table) == manifests(theirs)
    assert Table(str(table)).latest_version() == Table(str(theirs)).latest_version() == version  # no commit, either side
    mid = copy_table(table, tmp_path / "mid", with_manifests=False)
    shutil.rmtree(table / MANIFEST_DIR)
    theirs_generate(deltaspark, mid)
    ours_generate(spark, table)
    assert manifests(table) == manifests(mid)


@pytest.mark.parametrize("writer", ["sparkdelta", "delta-spark"])
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_automatic_manifests_equal_the_other_side_s_full_generation(
    spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path, script: str, writer: str
) -> None:
    """With the property on, each commit's manifests (the writer's, updated incrementally)
    equal a full generation by the other implementation on a copy of the table then."""
    table = tmp_path / "table"
    run = writers(spark, deltaspark)[writer]
    create, *changes = SCRIPTS[script]
    run(create.format(t=f"delta.`{table}`") + f" TBLPROPERTIES ('{ENABLED}' = 'true')")
    assert not (table / MANIFEST_DIR).exists()  # CREATE without rows: no file actions, no manifests
    for step, statement in enumerate(changes):
        run(statement.format(t=f"delta.`{table}`"))
        other = copy_table(table, tmp_path / f"step{step}", with_manifests=False)
        if writer == "sparkdelta":
            theirs_generate(deltaspark, other)
        else:
            ours_generate(spark, other)
        assert manifests(table) == manifests(other), statement


def test_refusals_carry_delta_spark_s_error_classes(spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path) -> None:
    """Deletion vectors, column mapping, an unknown mode and the property constraints: refused
    alike, and a commit refused by the manifest hook after it landed stands on both sides."""
    dvs = tmp_path / "dvs"
    deltaspark.run(
        "spark.range(0, 100, 1, 1).write.format('delta').option('delta.enableDeletionVectors', 'true').save(path);"
        "spark.sql(f'DELETE FROM delta.`{path}` WHERE id IN (1, 42)')",
        path=str(dvs),
    )
    ours = copy_table(dvs, tmp_path / "dvs_ours")
    expected = "DELTA_UNSUPPORTED_GENERATE_WITH_DELETION_VECTORS"
    assert theirs_condition(deltaspark, GENERATE, dvs) == expected
    assert ours_condition(spark, lambda: ours_generate(spark, ours)) == expected

    alter = "ALTER TABLE delta.`{{path}}` SET TBLPROPERTIES ({})"
    violation = "DELTA_VIOLATE_TABLE_PROPERTY_VALIDATION_FAILED.{}_DELETION_VECTORS_WITH_INCREMENTAL_MANIFEST_GENERATION"
    for properties, condition in (
        (f"'{ENABLED}' = 'true'", violation.format("PERSISTENT")),  # the table enables DVs
        ("'delta.enableDeletionVectors' = 'false'", None),
        (f"'{ENABLED}' = 'true'", violation.format("EXISTING")),  # its files still have DVs
        (f"'{ENABLED}' = 'true', 'delta.enableDeletionVectors' = 'true'", violation.format("PERSISTENT")),
    ):
        statement = alter.format(properties)
        assert theirs_condition(deltaspark, "spark.sql(sql.format(path=path))", dvs, statement) == condition
        assert ours_condition(spark, lambda s=statement: spark.sql(s.format(path=ours))) == condition

    plain = tmp_path / "plain"
    spark.range(3).write.format("delta").save(str(plain))
    unknown = 'DeltaTable.forPath(spark, path).generate("xyz")'
    assert theirs_condition(deltaspark, unknown, plain) == "DELTA_MODE_NOT_SUPPORTED"
    assert ours_condition(spark, lambda: DeltaTable.forPath(spark, str(plain)).generate("xyz")) == "DELTA_MODE_NOT_SUPPORTED"

    mapped = tmp_path / "mapped"
    spark.sql(
        f"CREATE TABLE delta.`{mapped}` (id INT) USING delta TBLPROPERTIES ('delta.columnMapping.mode' = 'name', '{ENABLED}' = 'true')"
    )
    theirs_mapped = copy_table(mapped, tmp_path / "mapped_theirs")
    insert = "INSERT INTO delta.`{path}` VALUES (1)"
    condition = "DELTA_UNSUPPORTED_MANIFEST_GENERATION_WITH_COLUMN_MAPPING"
    assert theirs_condition(deltaspark, "spark.sql(sql.format(path=path))", theirs_mapped, insert) == condition
    assert ours_condition(spark, lambda: spark.sql(insert.format(path=mapped))) == condition
    assert Table(str(mapped)).latest_version() == Table(str(theirs_mapped)).latest_version() == 1  # committed all the same
    assert theirs_condition(deltaspark, GENERATE, theirs_mapped) == condition
    assert ours_condition(spark, lambda: ours_generate(spark, mapped)) == condition
    assert not (mapped / MANIFEST_DIR).exists() and not (theirs_mapped / MANIFEST_DIR).exists()


def test_lines_name_files_as_hadoop_spells_them(spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path) -> None:
    """A root with a space and partition values that need escaping: the lines are the decoded
    absolute paths delta-spark writes, of files that exist."""
    table = tmp_path / "root with space"
    deltaspark.run(
        'spark.sql(f"CREATE TABLE delta.`{path}` (id INT, p STRING) USING delta PARTITIONED BY (p)");'
        "spark.sql(f\"INSERT INTO delta.`{path}` VALUES (1, 'a b'), (2, 'x:y'), (3, '100%'), (4, '库尔 勒')\")",
        path=str(table),
    )
    theirs = copy_table(table, tmp_path / "theirs with space")
    ours_generate(spark, table)
    theirs_generate(deltaspark, theirs)
    assert manifests(table) == manifests(theirs)
    for manifest in (table / MANIFEST_DIR).rglob("manifest"):
        for line in manifest.read_text().splitlines():
            assert re.match(r"file:/", line) and Path(line.removeprefix("file:")).is_file(), line

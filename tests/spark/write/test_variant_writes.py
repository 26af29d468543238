"""Variant columns written unshredded whatever the session says, and the session left alone.

A table without the ``variantShredding`` feature must hold its variants unshredded
(PROTOCOL.md). Spark 4.3's Parquet writer shreds them by default
(``spark.sql.variant.writeShredding.enabled``); sparkdelta's writes turn the shredding off
with a writer option of their own, so a session configured by ``sparkdelta.configure`` and
a plain session with only the hooks installed write the same unshredded files. delta-spark
reads each table back as the oracle.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltaspark import DeltaSpark, plain
from pyspark.sql import SparkSession

from sparkdelta.exceptions import DeltaAnalysisException
from sparkdelta.kernel import Table
from sparkdelta.tables import DeltaTable

ROOT = Path(__file__).resolve().parents[3]
SHREDDING = "spark.sql.variant.writeShredding.enabled"
FORCED = "spark.sql.variant.forceShreddingSchemaForTest"

# Variants at the top level, in an array and in a struct, with a shape Spark would shred.
ROWS = """
SELECT id,
       parse_json(concat('{"a": ', id, ', "b": "x', id, '"}')) AS v,
       array(parse_json(concat('[', id, ']')), NULL) AS arr,
       named_struct('s', try_parse_json(concat('{"c": ', id * 10, '}'))) AS st
FROM range(40)
"""

READ_BACK = """
df = spark.read.format("delta").load(path)
result = sorted(
    (plain(r) for r in df.selectExpr("id", "v:a::int", "v:b::string", "to_json(arr)", "st.s:c::int").collect()), key=repr
)
"""


def _expected(ids: range, bump: int = 0) -> list[tuple[object, ...]]:
    return sorted(((i, i + bump, f"x{i}", f"[[{i}],null]", i * 10) for i in ids), key=repr)


def _variant_leaves(field_type: pa.DataType) -> Iterator[pa.StructType]:
    """Every Parquet group that stores a variant (a struct with a ``metadata`` binary)."""
    if isinstance(field_type, pa.StructType):
        names = {f.name for f in field_type}
        if "metadata" in names:
            yield field_type
            return
        for child in field_type:
            yield from _variant_leaves(child.type)
    elif isinstance(field_type, (pa.ListType, pa.LargeListType)):
        yield from _variant_leaves(field_type.value_type)


def assert_unshredded(path: str) -> None:
    """Every data file of the table stores each variant as ``value`` and ``metadata`` only."""
    files = Table(path).snapshot().file_paths()
    assert files
    for file in files:
        schema = pq.read_schema(os.path.join(path, file))
        groups = [g for f in schema for g in _variant_leaves(f.type)]
        assert len(groups) == 3, file
        assert all(sorted(f.name for f in g) == ["metadata", "value"] for g in groups), f"{file} is shredded: {schema}"


@pytest.fixture
def shredding_on(spark: SparkSession) -> Iterator[None]:
    """The session as Spark 4.3 leaves it: shredding enabled (set here explicitly)."""
    before = spark.conf.get(SHREDDING, None)
    spark.conf.set(SHREDDING, "true")
    yield
    spark.conf.unset(SHREDDING) if before is None else spark.conf.set(SHREDDING, before)


def test_a_configured_session_writes_unshredded_variants_and_keeps_its_settings(
    spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path, shredding_on: None
) -> None:
    path = str(tmp_path / "t")
    data = spark.sql(ROWS)
    data.where("id < 20").write.format("delta").save(path)
    data.where("id >= 20").write.format("delta").mode("append").save(path)
    DeltaTable.forPath(spark, path).update(
        "id % 3 = 0", {"v": "parse_json(concat('{\"a\": ', id + 1, ', \"b\": \"x', id, '\"}'))"}
    )
    assert spark.conf.get(SHREDDING) == "true", "the session is left as its user set it"
    assert_unshredded(path)
    expected = sorted(((i, i + (1 if i % 3 == 0 else 0), f"x{i}", f"[[{i}],null]", i * 10) for i in range(40)), key=repr)
    assert deltaspark.run(READ_BACK, path=path) == expected
    ours = spark.read.format("delta").load(path).selectExpr("id", "v:a::int", "v:b::string", "to_json(arr)", "st.s:c::int")
    assert sorted((plain(r) for r in ours.collect()), key=repr) == expected
    protocol = Table(path).snapshot().protocol
    assert "variantType" in protocol.reader_features and "variantShredding" not in (protocol.writer_features or ())


def test_a_shredding_schema_forced_on_the_session_is_refused_by_name(
    spark: SparkSession, tmp_path: Path, shredding_on: None
) -> None:
    """Spark's test-only setting forces its writer to shred whatever the write says: refused, nothing written."""
    path = str(tmp_path / "t")
    spark.conf.set(FORCED, "struct<a: int>")
    try:
        with pytest.raises(DeltaAnalysisException, match=FORCED):
            spark.sql(ROWS).write.format("delta").save(path)
        assert not Table(path).exists()
        spark.range(2).write.format("delta").save(path)  # tables without variants are not concerned
        assert spark.conf.get(FORCED) == "struct<a: int>"
    finally:
        spark.conf.unset(FORCED)


PLAIN_SESSION = """
import json, os, sys
from pyspark.sql import SparkSession
import sparkdelta.spark.hooks
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
sparkdelta.spark.hooks.install()
path, rows = sys.argv[1], sys.argv[2]
before = spark.conf.get("spark.sql.variant.writeShredding.enabled", None)
data = spark.sql(rows)
data.where("id < 20").write.format("delta").save(path)
data.where("id >= 20").write.format("delta").mode("append").save(path)
back = spark.read.format("delta").load(path).selectExpr("id", "v:a::int", "v:b::string", "to_json(arr)", "st.s:c::int")
print(json.dumps({
    "before": before,
    "after": spark.conf.get("spark.sql.variant.writeShredding.enabled", None),
    "shreds": spark.conf.get("spark.sql.variant.writeShredding.enabled"),
    "rows": sorted([list(r) for r in back.collect()]),
}))
"""


def test_a_plain_session_with_only_the_hooks_writes_unshredded_variants(deltaspark: DeltaSpark, tmp_path: Path) -> None:
    """No ``sparkdelta.configure``: Spark's own defaults (shredding on), the hooks installed by hand."""
    path = str(tmp_path / "t")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PLAIN_SESSION), path, ROWS],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["before"] is None and report["after"] is None, "the session's settings are untouched"
    assert report["shreds"] == "true", "Spark's default: a plain session shreds"
    assert_unshredded(path)
    expected = _expected(range(40))
    assert sorted((tuple(r) for r in report["rows"]), key=repr) == expected
    assert deltaspark.run(READ_BACK, path=path) == expected

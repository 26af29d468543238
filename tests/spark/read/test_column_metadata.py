"""Field metadata (column comments and the like) on every read path, as delta-spark shows it.

A read's schema carries the table's field metadata less the keys only Delta's writers use
(column mapping ids and physical names, generation expressions, identity keys, type
changes): ``spark.read.format("delta").load``, time travel, filtered (pruned) reads,
``spark.table``, ``DeltaTable.toDF``, SQL over paths and names, and the change feed's
data columns, on plain, partitioned, deletion-vector and column-mapped tables, empty or not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from deltaspark import DeltaSpark
from plans import physical_plan
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from sparkdelta.spark.read.scan import scan_info
from sparkdelta.tables import DeltaTable

Read = Callable[[SparkSession, str, str], DataFrame]

# Every read path, by name: (session, path, table name) -> DataFrame.
READS: dict[str, Read] = {
    "load": lambda spark, path, name: spark.read.format("delta").load(path),
    "load where": lambda spark, path, name: spark.read.format("delta").load(path).where("id = 1"),
    "load filter twice": lambda spark, path, name: spark.read.format("delta").load(path).filter("id < 3").filter("id = 1"),
    "versionAsOf": lambda spark, path, name: spark.read.format("delta").option("versionAsOf", 2).load(path),
    "spark.table": lambda spark, path, name: spark.table(name),
    "spark.read.table": lambda spark, path, name: spark.read.table(name),
    "spark.table where": lambda spark, path, name: spark.table(name).where("id = 1"),
    "forPath toDF": lambda spark, path, name: DeltaTable.forPath(spark, path).toDF(),
    "forName toDF": lambda spark, path, name: DeltaTable.forName(spark, name).toDF(),
    "sql path": lambda spark, path, name: spark.sql(f"SELECT * FROM delta.`{path}`"),
    "sql path where": lambda spark, path, name: spark.sql(f"SELECT * FROM delta.`{path}` WHERE id = 1"),
    "sql name": lambda spark, path, name: spark.sql(f"SELECT * FROM {name}"),
    "sql name where": lambda spark, path, name: spark.sql(f"SELECT * FROM {name} WHERE id = 1"),
    "sql version as of": lambda spark, path, name: spark.sql(f"SELECT * FROM {name} VERSION AS OF 2"),
}
CHANGE_READS: dict[str, Read] = {
    "readChangeFeed": lambda spark, path, name: (
        spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(path)
    ),
    "table_changes": lambda spark, path, name: spark.sql(f"SELECT * FROM table_changes('{name}', 0)"),
}
# Reads of the table before any data: no files to scan.
EMPTY_READS: dict[str, Read] = {
    "versionAsOf 0": lambda spark, path, name: spark.read.format("delta").option("versionAsOf", 0).load(path),
    "sql version as of 0": lambda spark, path, name: spark.sql(f"SELECT * FROM delta.`{path}` VERSION AS OF 0"),
    "changes of no files": lambda spark, path, name: spark.sql(f"SELECT * FROM table_changes('{name}', 0, 1)"),
}

NESTED = StructType([StructField("x", IntegerType(), True, {"comment": "nested x"}), StructField("y", StringType())])
# Top-level metadata by column, nested fields by dotted path; the change columns carry none.
SHOWN = {
    "id": {"comment": "the id"},
    "s": {"comment": "a struct"},
    "s.x": {"comment": "nested x"},
    "s.y": {},
    "g": {"comment": "doubled"},
    "u": {"origin": "user", "comment": "free text"},
    "part": {"comment": "a partition"},
}
CHANGE_COLUMNS = {"_change_type": {}, "_commit_version": {}, "_commit_timestamp": {}}
LAYOUTS = {
    "plain": ((), {"delta.enableDeletionVectors": "true"}),
    "partitioned": (("part",), {}),
    "column-mapped": (("part",), {"delta.columnMapping.mode": "name"}),
}


def field_metadata(schema: StructType, prefix: str = "") -> dict[str, dict[str, Any]]:
    """Each field's metadata by dotted path (nested structs included)."""
    found: dict[str, dict[str, Any]] = {}
    for f in schema.fields:
        found[prefix + f.name] = f.metadata
        if isinstance(f.dataType, StructType):
            found.update(field_metadata(f.dataType, f"{prefix}{f.name}."))
    return found


@dataclass(frozen=True)
class Made:
    path: str
    name: str


@pytest.fixture(scope="module")
def tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Made]:
    """Per layout, a table built with comments (one then changed by ALTER), a generated column,
    a user's key and a nested comment; versions: 0 create, 1 comment, 2 and 3 appends, and on
    the plain one 4 a DELETE by deletion vector."""
    made: dict[str, Made] = {}
    for layout, (partitions, properties) in LAYOUTS.items():
        path = str(tmp_path_factory.mktemp("metadata") / layout)
        name = f"column_metadata_{layout.replace('-', '_')}"
        builder = (
            DeltaTable.create(spark)
            .tableName(name)
            .location(path)
            .addColumn("id", "BIGINT", comment="an id")
            .addColumn("s", NESTED, comment="a struct")
            .addColumn("g", "BIGINT", generatedAlwaysAs="id * 2", comment="doubled")
            .addColumns([StructField("u", StringType(), True, {"origin": "user", "comment": "free text"})])
            .addColumn("part", "STRING", comment="a partition")
            .partitionedBy(*partitions)
            .property("delta.enableChangeDataFeed", "true")
        )
        for key, value in properties.items():
            builder = builder.property(key, value)
        builder.execute()
        spark.sql(f"ALTER TABLE {name} ALTER COLUMN id COMMENT 'the id'")
        for ids in ((1, 2), (3, 4)):
            rows = [(i, (i, str(i)), "u", f"p{i}") for i in ids]
            data = spark.createDataFrame(rows, "id BIGINT, s STRUCT<x: INT, y: STRING>, u STRING, part STRING")
            data.coalesce(1).write.format("delta").mode("append").save(path)
        if layout == "plain":
            spark.sql(f"DELETE FROM {name} WHERE id = 4")
        made[layout] = Made(path, name)
    return made


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("read", READS)
def test_reads_show_the_tables_field_metadata(spark: SparkSession, tables: dict[str, Made], layout: str, read: str) -> None:
    table = tables[layout]
    assert field_metadata(READS[read](spark, table.path, table.name).schema) == SHOWN


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("read", CHANGE_READS)
def test_change_feeds_show_it_on_their_data_columns(spark: SparkSession, tables: dict[str, Made], layout: str, read: str) -> None:
    table = tables[layout]
    assert field_metadata(CHANGE_READS[read](spark, table.path, table.name).schema) == SHOWN | CHANGE_COLUMNS


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("read", EMPTY_READS)
def test_reads_of_no_files_show_it(spark: SparkSession, tables: dict[str, Made], layout: str, read: str) -> None:
    table = tables[layout]
    shown = SHOWN | {"id": {"comment": "an id"}}  # version 0, before the ALTER
    if read == "changes of no files":
        shown = SHOWN | CHANGE_COLUMNS  # the range's last version's schema
    assert field_metadata(EMPTY_READS[read](spark, table.path, table.name).schema) == shown


def test_metadata_rides_on_the_native_scan(spark: SparkSession, tables: dict[str, Made]) -> None:
    """No extra job, no cast: the plain table's comments come on the Parquet scan's own
    fields, so files are pruned, filters pushed down and nested columns pruned as before."""
    df = spark.read.format("delta").option("versionAsOf", 3).load(tables["plain"].path).where("id = 1")
    info = scan_info(df)
    assert info is not None and (info.files_read, info.files_pruned) == (1, 1)
    projected = df.select("s.x", "u")
    plan = physical_plan(projected)
    assert "FileScan parquet" in plan and "cast(" not in plan.lower(), plan
    assert (
        "PushedFilters: [IsNotNull(id), EqualTo(id,1)]" in plan
        and "ReadSchema: struct<id:bigint,s:struct<x:int>,u:string>" in plan
    )
    assert field_metadata(projected.schema) == {"x": {"comment": "nested x"}, "u": SHOWN["u"]}
    assert [tuple(r) for r in projected.collect()] == [(1, "u")]


def test_rows_are_unchanged(spark: SparkSession, tables: dict[str, Made]) -> None:
    for layout, table in tables.items():
        rows = sorted(tuple(r) for r in spark.read.format("delta").load(table.path).select("id", "s.x", "g", "part").collect())
        expected = [(i, i, 2 * i, f"p{i}") for i in (1, 2, 3, 4) if layout != "plain" or i != 4]
        assert rows == expected, layout


# delta-spark's reads of a table with every kind of field metadata, by path name.
DELTASPARK_READS = """
p, name = path, table
reads = {
    "load": lambda: spark.read.format("delta").load(p),
    "load where": lambda: spark.read.format("delta").load(p).where("a = 1"),
    "versionAsOf 0": lambda: spark.read.format("delta").option("versionAsOf", 0).load(p),
    "spark.table": lambda: spark.table(name),
    "forPath toDF": lambda: DeltaTable.forPath(spark, p).toDF(),
    "forName toDF": lambda: DeltaTable.forName(spark, name).toDF(),
    "sql path": lambda: spark.sql(f"SELECT * FROM delta.`{p}`"),
    "sql name where": lambda: spark.sql(f"SELECT * FROM {name} WHERE a = 1"),
    "readChangeFeed": lambda: spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(p),
    "table_changes": lambda: spark.sql(f"SELECT * FROM table_changes('{name}', 0)"),
}
result = {read: df().schema.json() for read, df in reads.items()}
"""
DELTASPARK_TABLE = """
spark.sql(f'''CREATE TABLE {table} (
  id BIGINT GENERATED ALWAYS AS IDENTITY COMMENT 'the id',
  a INT COMMENT 'an a',
  w SMALLINT COMMENT 'widened',
  g INT GENERATED ALWAYS AS (a * 2) COMMENT 'gen',
  s STRUCT<x: INT COMMENT 'nested x', y: STRING> COMMENT 'a struct',
  arr ARRAY<STRUCT<q: INT COMMENT 'q'>>,
  v VARCHAR(10) COMMENT 'vc',
  d INT DEFAULT 5,
  part STRING COMMENT 'partition col'
) USING delta PARTITIONED BY (part) LOCATION '{path}'
TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.enableChangeDataFeed' = 'true',
  'delta.feature.allowColumnDefaults' = 'supported', 'delta.enableTypeWidening' = 'true')''')
spark.sql(f"ALTER TABLE {table} ADD CONSTRAINT positive CHECK (a > 0)")
spark.sql(f"ALTER TABLE {table} ALTER COLUMN a COMMENT 'new a'")
columns = "(a, w, s, arr, v, part)"
spark.sql(f"INSERT INTO {table} {columns} VALUES (1, 1, named_struct('x', 1, 'y', 'y'), array(named_struct('q', 1)), 'v', 'p1')")
spark.sql(f"ALTER TABLE {table} ALTER COLUMN w TYPE INT")
spark.sql(f"INSERT INTO {table} {columns} VALUES (2, 2, named_struct('x', 2, 'y', 'z'), array(), 'w', 'p2')")
"""


def test_reads_show_what_deltasparks_show(spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path) -> None:
    """A table delta-spark made with comments, identity, generated, default, varchar, nested,
    type-widened and column-mapped columns and a CHECK constraint: each read's schema JSON is
    the one delta-spark's own read of it gives."""
    path, name = str(tmp_path / "theirs"), "column_metadata_theirs"
    deltaspark.run(DELTASPARK_TABLE, path=path, table=name)
    spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{path}'")
    theirs = deltaspark.run(DELTASPARK_READS, path=path, table=name)
    ours: dict[str, Read] = {
        "load": lambda spark, path, name: spark.read.format("delta").load(path),
        "load where": lambda spark, path, name: spark.read.format("delta").load(path).where("a = 1"),
        "sql name where": lambda spark, path, name: spark.sql(f"SELECT * FROM {name} WHERE a = 1"),
        **{read: READS[read] for read in ("spark.table", "forPath toDF", "forName toDF", "sql path")},
        "versionAsOf 0": lambda spark, path, name: spark.read.format("delta").option("versionAsOf", 0).load(path),
        **CHANGE_READS,
    }
    assert set(ours) == set(theirs)
    for read, df in ours.items():
        assert json.loads(df(spark, path, name).schema.json()) == json.loads(theirs[read]), read
    assert field_metadata(StructType.fromJson(json.loads(theirs["load"])))["a"] == {"comment": "new a"}


def test_deltaspark_reads_our_tables_with_the_same_metadata(
    spark: SparkSession, deltaspark: DeltaSpark, tables: dict[str, Made]
) -> None:
    for layout, table in tables.items():
        theirs = deltaspark.run("result = spark.read.format('delta').load(path).schema.json()", path=table.path)
        assert json.loads(theirs) == json.loads(spark.read.format("delta").load(table.path).schema.json()), layout

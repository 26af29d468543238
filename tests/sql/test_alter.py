"""ALTER TABLE on Delta tables through ``spark.sql``: properties, columns, comments, constraints,
renames and drops under column mapping; each a metadata-only commit, checked in the log and
by delta-rs where it can read the table. ALTER / CHANGE COLUMN, ADD COLUMNS at positions, the
catalog-only forms and the refused ones are checked against delta-spark (``tests/deltaspark.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import deltalake
import pytest
from deltaspark import DeltaSpark, rows
from pyspark.errors import AnalysisException, ParseException, PySparkException, UnsupportedOperationException
from pyspark.sql import SparkSession

from sparkdelta.exceptions import (
    ConcurrentAppendException,
    DeltaAnalysisException,
    DeltaInvariantViolationException,
    InvalidTablePropertyError,
)
from sparkdelta.kernel import Table


@pytest.fixture
def path(spark: SparkSession, tmp_path: Path) -> str:
    location = str(tmp_path / "t")
    rows = spark.createDataFrame([(1, "a", (10, "x")), (2, "b", (20, "y"))], "id long, v string, s struct<n: int, w: string>")
    rows.write.format("delta").save(location)
    return location


def _operation(path: str) -> str:
    return Table(path).snapshot().commit_info["operation"]


def test_set_and_unset_properties(spark: SparkSession, path: str) -> None:
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 60 days', 'team' = 'taxi')"
    )
    assert Table(path).snapshot().configuration == {"delta.logRetentionDuration": "interval 60 days", "team": "taxi"}
    assert _operation(path) == "SET TBLPROPERTIES"
    with pytest.raises(InvalidTablePropertyError, match="delta.appendOnly"):
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.appendOnly' = 'maybe')")
    spark.sql(f"ALTER TABLE delta.`{path}` UNSET TBLPROPERTIES ('team')")
    assert Table(path).snapshot().configuration == {"delta.logRetentionDuration": "interval 60 days"}
    assert _operation(path) == "UNSET TBLPROPERTIES"
    version = Table(path).latest_version()
    spark.sql(f"ALTER TABLE delta.`{path}` UNSET TBLPROPERTIES ('team')")  # IF EXISTS or not, as delta-spark
    spark.sql(f"ALTER TABLE delta.`{path}` UNSET TBLPROPERTIES IF EXISTS ('team')")
    assert Table(path).latest_version() == version + 2
    assert deltalake.DeltaTable(path).metadata().configuration == {"delta.logRetentionDuration": "interval 60 days"}


def test_add_columns_and_comments(spark: SparkSession, path: str) -> None:
    spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (amount DOUBLE COMMENT 'in dollars', s.z INT)")
    schema = spark.read.format("delta").load(path).schema
    assert schema.simpleString() == "struct<id:bigint,v:string,s:struct<n:int,w:string,z:int>,amount:double>"
    assert schema["amount"].metadata["comment"] == "in dollars"
    assert _operation(path) == "ADD COLUMNS"
    spark.createDataFrame([(3, "c", (30, "z", 3), 1.5)], schema).write.format("delta").mode("append").save(path)
    rows = sorted(deltalake.DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["amount"], r["s"]["z"]) for r in rows] == [(1, None, None), (2, None, None), (3, 1.5, 3)]
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN v COMMENT 'the value'")
    assert spark.read.format("delta").load(path).schema["v"].metadata["comment"] == "the value"
    with pytest.raises(DeltaAnalysisException, match="already exists"):
        spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (v STRING)")


def test_add_constraint_refused_when_rows_land_after_its_check(
    spark: SparkSession, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The constraint is checked against one snapshot: an append committed after the check
    (here, one that violates it) must refuse the ALTER, as in delta-spark, where it read
    the whole table and so is no blind append."""
    from sparkdelta.spark.commands import alter

    checked_rows = alter.read_snapshot
    bad = spark.createDataFrame([(-1, "n", (0, "q"))], "id long, v string, s struct<n: int, w: string>")

    def append_while_checking(*args, **kwargs):  # noqa: ANN002, ANN003
        rows = checked_rows(*args, **kwargs)
        bad.write.format("delta").mode("append").save(path)
        return rows

    monkeypatch.setattr(alter, "read_snapshot", append_while_checking)
    with pytest.raises(ConcurrentAppendException):
        spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (id > 0)")
    assert "delta.constraints.positive" not in Table(path).snapshot().configuration


def test_check_constraints_are_validated_then_enforced(spark: SparkSession, path: str) -> None:
    version = Table(path).latest_version()
    with pytest.raises(DeltaAnalysisException, match="1 rows in version 0 violate"):
        spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT small CHECK (id < 2)")
    assert Table(path).latest_version() == version
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (id > 0)")
    snapshot = Table(path).snapshot()
    assert snapshot.configuration["delta.constraints.positive"] == "id > 0"
    assert snapshot.protocol.min_writer_version >= 3 and _operation(path) == "ADD CONSTRAINT"
    bad = spark.createDataFrame([(-1, "n", (0, "q"))], "id long, v string, s struct<n: int, w: string>")
    with pytest.raises(DeltaInvariantViolationException, match="positive"):
        bad.write.format("delta").mode("append").save(path)
    spark.sql(f"ALTER TABLE delta.`{path}` DROP CONSTRAINT positive")
    bad.write.format("delta").mode("append").save(path)
    assert spark.read.format("delta").load(path).count() == 3
    with pytest.raises(DeltaAnalysisException, match="does not exist"):
        spark.sql(f"ALTER TABLE delta.`{path}` DROP CONSTRAINT positive")
    spark.sql(f"ALTER TABLE delta.`{path}` DROP CONSTRAINT IF EXISTS positive")


def test_rename_and_drop_columns_under_column_mapping_rewrite_nothing(spark: SparkSession, path: str) -> None:
    with pytest.raises(DeltaAnalysisException, match="needs column mapping"):
        spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN v TO value")
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    files = set(Table(path).snapshot().file_paths())
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN v TO value")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN s.w TO word")
    spark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMN s.n")
    table = spark.read.format("delta").load(path)
    assert table.columns == ["id", "value", "s"]
    assert sorted((r.id, r.value, r.s.word) for r in table.collect()) == [(1, "a", "x"), (2, "b", "y")]
    assert set(Table(path).snapshot().file_paths()) == files
    spark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMNS (value)")
    assert spark.read.format("delta").load(path).columns == ["id", "s"]
    fields = json.loads(Table(path).snapshot().metadata.schema_string)["fields"]
    assert all("delta.columnMapping.physicalName" in f["metadata"] for f in fields)
    assert [h["operation"] for h in deltalake.DeltaTable(path).history(4)] == [
        "DROP COLUMNS",
        "DROP COLUMNS",
        "RENAME COLUMN",
        "RENAME COLUMN",
    ]


def test_named_tables_and_other_formats(spark: SparkSession, path: str) -> None:
    spark.sql(f"CREATE TABLE altered USING delta LOCATION '{path}'")
    try:
        spark.sql("ALTER TABLE altered SET TBLPROPERTIES ('team' = 'taxi')")
        assert Table(path).snapshot().configuration == {"team": "taxi"}
        spark.sql("CREATE TABLE plain_parquet (id INT) USING parquet")
        spark.sql("ALTER TABLE plain_parquet ADD COLUMNS (extra STRING)")  # Spark's own
        assert spark.table("plain_parquet").columns == ["id", "extra"]
    finally:
        spark.sql("DROP TABLE IF EXISTS altered")
        spark.sql("DROP TABLE IF EXISTS plain_parquet")


# --- ALTER / CHANGE COLUMN, checked against delta-spark -------------------------------------------
#
# Each script runs statement by statement on a table of sparkdelta's and one of delta-spark's
# (``{t}`` names the table): every statement must succeed on both or fail on both with the
# same error class, each commit must record the same operation and parameters, and the
# tables must end with the same schema (field metadata, order, nullability, partitioning).
# The logs are read as files, by neither implementation.

ORACLE_RUN = """
outcomes = []
for statement in statements:
    try:
        spark.sql(statement)
        outcomes.append(None)
    except Exception as error:
        outcomes.append((type(error).__name__, error.getCondition() if hasattr(error, "getCondition") else None))
result = outcomes
"""


def _our_outcomes(spark: SparkSession, statements: list[str]) -> list[tuple[str, str | None] | None]:
    outcomes: list[tuple[str, str | None] | None] = []
    for statement in statements:
        try:
            spark.sql(statement)
            outcomes.append(None)
        except PySparkException as error:
            kinds = (ParseException, AnalysisException, UnsupportedOperationException, PySparkException)
            kind = next(k for k in kinds if isinstance(error, k)).__name__
            outcomes.append((kind, error.getCondition()))
    return outcomes


def _without_physical_names(value: Any) -> Any:
    """``value`` without column mapping's physical names, which each writer draws at random."""
    if isinstance(value, dict):
        return {k: _without_physical_names(v) for k, v in value.items() if k != "delta.columnMapping.physicalName"}
    if isinstance(value, list):
        return [_without_physical_names(v) for v in value]
    return value


def _parsed(value: Any) -> Any:
    try:
        return _without_physical_names(json.loads(value))
    except (TypeError, ValueError):
        return value


def _commits(path: Path) -> list[dict[str, Any]]:
    """Each version's commit info and metadata, from the log files."""
    commits = []
    for file in sorted((path / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
        info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
        metadata = next((a["metaData"] for a in actions if "metaData" in a), None)
        commits.append(
            {
                "operation": info["operation"],
                "parameters": {k: _parsed(v) for k, v in info.get("operationParameters", {}).items()},
                "schema": _parsed(metadata["schemaString"]) if metadata else None,
                "partitionColumns": metadata["partitionColumns"] if metadata else None,
                "description": metadata.get("description") if metadata else None,
                "configuration": metadata["configuration"] if metadata else None,
            }
        )
    return commits


def _schema(commits: list[dict[str, Any]]) -> Any:
    """The table's last metadata: schema, partitioning, description and configuration."""
    last = next(c for c in reversed(commits) if c["schema"] is not None)
    return last["schema"], last["partitionColumns"], last["description"], last["configuration"]


def _same_as_deltaspark(
    spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path, script: list[str]
) -> tuple[Path, Path, list[tuple[str, str | None] | None]]:
    """Run ``script`` on both; assert the outcomes, the ALTER commits and the final schema agree."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    our_outcomes = _our_outcomes(spark, [s.format(t=f"delta.`{ours}`") for s in script])
    their_outcomes = deltaspark.run(ORACLE_RUN, statements=[s.format(t=f"delta.`{theirs}`") for s in script])
    assert list(zip(script, our_outcomes, strict=True)) == list(zip(script, their_outcomes, strict=True))
    our_commits, their_commits = _commits(ours), _commits(theirs)
    assert len(our_commits) == len(their_commits)
    for version, (mine, reference) in enumerate(zip(our_commits, their_commits, strict=True)):
        if reference["operation"] not in ("CREATE TABLE", "WRITE"):  # the ALTERs' commits
            assert (version, mine["operation"], mine["parameters"]) == (
                version,
                reference["operation"],
                reference["parameters"],
            )
    assert _schema(our_commits) == _schema(their_commits)
    return ours, theirs, our_outcomes


READ = """
df = spark.read.format("delta").load(path)
result = (rows(df), [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields])
"""


def _read_alike(spark: SparkSession, deltaspark: DeltaSpark, path: Path, reference: Path) -> None:
    """delta-spark reads sparkdelta's table as its own, and sparkdelta reads it as delta-spark does."""
    theirs = deltaspark.run(READ, path=str(reference))
    assert deltaspark.run(READ, path=str(path)) == theirs
    df = spark.read.format("delta").load(str(path))
    assert (rows(df), [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields]) == theirs


def test_change_column_moves_comments_and_relaxes_columns_as_deltaspark(
    spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path
) -> None:
    """CHANGE COLUMN (Hive's form and Spark 4's) and ALTER COLUMN: positions at the top and in
    nested structs (through arrays and maps too), comments, DROP NOT NULL, DROP DEFAULT; each
    one commit of new metadata, a change to nothing none."""
    script = [
        "CREATE TABLE {t} (a INT, b STRING NOT NULL, s STRUCT<x: INT NOT NULL, y: STRING>,"
        " arr ARRAY<STRUCT<p: INT, q: INT>>, m MAP<STRING, STRUCT<k: INT, l: INT>>, p STRING) USING delta PARTITIONED BY (p)",
        "INSERT INTO {t} VALUES (1, 'one', named_struct('x', 10, 'y', 'ten'), array(named_struct('p', 1, 'q', 2)),"
        " map('k', named_struct('k', 3, 'l', 4)), 'P')",
        "ALTER TABLE {t} CHANGE COLUMN a a INT AFTER b",
        "ALTER TABLE {t} CHANGE a a INT COMMENT 'the a' FIRST",
        "ALTER TABLE {t} CHANGE COLUMN b b STRING COMMENT 'bee'",
        "ALTER TABLE {t} CHANGE COLUMN A A INT AFTER B",
        "ALTER TABLE {t} CHANGE COLUMN a COMMENT 'spec form'",
        "ALTER TABLE {t} CHANGE COLUMN a AFTER p",
        "ALTER TABLE {t} CHANGE COLUMN a a INT",
        "ALTER TABLE {t} CHANGE COLUMN s.y y STRING FIRST",
        "ALTER TABLE {t} ALTER COLUMN s.x COMMENT 'ex'",
        "ALTER TABLE {t} ALTER COLUMN s.x DROP NOT NULL",
        "ALTER TABLE {t} ALTER COLUMN b DROP NOT NULL",
        "ALTER TABLE {t} ALTER COLUMN b DROP NOT NULL",
        "ALTER TABLE {t} ALTER COLUMN arr.element.q FIRST",
        "ALTER TABLE {t} ALTER COLUMN m.value.l AFTER k",
        "ALTER TABLE {t} ALTER COLUMN arr.element FIRST",
        "ALTER TABLE {t} ALTER COLUMN p FIRST",
        "ALTER TABLE {t} ALTER COLUMN p COMMENT 'partition'",
        "ALTER TABLE {t} ALTER COLUMN a DROP DEFAULT",
        "ALTER TABLE {t} ALTER COLUMN a TYPE INT",
        "ALTER TABLE {t} CHANGE COLUMN s s STRUCT<y: STRING, x: INT COMMENT 'ex'> COMMENT 'a struct' AFTER a",
        "ALTER TABLE {t} ALTER COLUMN a COMMENT 'x', b FIRST, s.x FIRST, m.value.k COMMENT 'kay'",
        "INSERT INTO {t} (p, b, a, s, arr, m) VALUES ('Q', 'two', 2, named_struct('x', NULL, 'y', 'twenty'),"
        " array(named_struct('q', 5, 'p', 6)), map('k', named_struct('k', 7, 'l', 8)))",
    ]
    ours, theirs, outcomes = _same_as_deltaspark(spark, deltaspark, tmp_path, script)
    assert outcomes == [None] * len(script)
    assert len(_commits(ours)) == len(script) - 2, "the type change to INT and CHANGE COLUMN a a INT commit nothing"
    _read_alike(spark, deltaspark, ours, theirs)


def test_many_columns_change_in_deltasparks_order(spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path) -> None:
    """Spark 4's ``ALTER COLUMN a ..., b ...``: one CHANGE COLUMNS commit whose columns, and
    whose moves, come in delta-spark's order (a Scala hash map's), not the statement's."""
    names = [f"c{i}" for i in range(1, 15)] + ["id", "value", "name", "AbC"]
    script = [
        "CREATE TABLE {t} (" + ", ".join(f"{c} INT" for c in names) + ", s STRUCT<x: INT, y: INT, zz: INT>) USING delta",
        "ALTER TABLE {t} ALTER COLUMN " + ", ".join(f"{c} COMMENT '{c}'" for c in names[:13]),
        "ALTER TABLE {t} ALTER COLUMN id FIRST, value FIRST, name FIRST, abc AFTER c3, s.zz FIRST, s.x AFTER y",
        "ALTER TABLE {t} ALTER COLUMN c14 FIRST, c13 FIRST, c12 FIRST, c11 FIRST",
        "ALTER TABLE {t} CHANGE COLUMN c1 AFTER c2, c2 AFTER c1",
    ]
    ours, _, outcomes = _same_as_deltaspark(spark, deltaspark, tmp_path, script)
    assert outcomes == [None] * len(script)
    assert [c["operation"] for c in _commits(ours)[1:]] == ["CHANGE COLUMNS"] * 4


def test_change_column_under_column_mapping_as_deltaspark(spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path) -> None:
    """Names that need column mapping (with a dot, with a space) in positions and parameters,
    whose column metadata (ids) delta-spark records too; a rename through CHANGE COLUMN is
    refused even here, by Spark's grammar, as in delta-spark."""
    script = [
        "CREATE TABLE {t} (id INT, `a.b` STRING, `x y` INT, s STRUCT<`c.d`: INT, e: INT>, p STRING) USING delta"
        " PARTITIONED BY (p) TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        "INSERT INTO {t} VALUES (1, 'ab', 2, named_struct('c.d', 3, 'e', 4), 'P')",
        "ALTER TABLE {t} CHANGE COLUMN id id INT COMMENT 'ident' AFTER p",
        "ALTER TABLE {t} ALTER COLUMN `x y` FIRST",
        "ALTER TABLE {t} ALTER COLUMN `a.b` COMMENT 'dotted'",
        "ALTER TABLE {t} ALTER COLUMN s.e AFTER `c.d`",
        "ALTER TABLE {t} ALTER COLUMN s.`c.d` AFTER e",
        "ALTER TABLE {t} CHANGE COLUMN id ident INT",
        "ALTER TABLE {t} RENAME COLUMN `x y` TO xy",
        "ALTER TABLE {t} ALTER COLUMN xy AFTER `a.b`, p FIRST",
        "INSERT INTO {t} (id, xy, `a.b`, s, p) VALUES (5, 6, 'cd', named_struct('e', 7, 'c.d', 8), 'Q')",
    ]
    ours, theirs, outcomes = _same_as_deltaspark(spark, deltaspark, tmp_path, script)
    assert outcomes[7] == ("ParseException", "_LEGACY_ERROR_TEMP_0034")
    _read_alike(spark, deltaspark, ours, theirs)


def test_type_changes_through_change_column_as_deltaspark(spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path) -> None:
    """Type changes only as delta-spark allows them: none without type widening; with it, the
    widenings, recorded in ``delta.typeChanges`` (on the array or map holding an element, key
    or value, with its ``fieldPath``), and never under a CHECK constraint or a generated column."""
    script = [
        "CREATE TABLE {t} (id INT, a SMALLINT, s STRUCT<x: INT, y: STRING>, ai ARRAY<INT>, m MAP<STRING, INT>,"
        " d DECIMAL(6,2), p INT, g INT GENERATED ALWAYS AS (id * 2)) USING delta PARTITIONED BY (p)",
        "INSERT INTO {t} (id, a, s, ai, m, d, p) VALUES (1, 2, named_struct('x', 3, 'y', 'y'), array(4), map('k', 5), 6.5, 7)",
        "ALTER TABLE {t} ALTER COLUMN a TYPE INT",
        "ALTER TABLE {t} CHANGE COLUMN a a BIGINT",
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
        "ALTER TABLE {t} ADD CONSTRAINT positive CHECK (abs(s.x) >= 0 AND s.y <> 'a b')",
        "ALTER TABLE {t} ALTER COLUMN a TYPE INT",
        "ALTER TABLE {t} CHANGE COLUMN a a BIGINT COMMENT 'widened twice' FIRST",
        "ALTER TABLE {t} CHANGE COLUMN a a BIGINT AFTER id",
        "ALTER TABLE {t} ALTER COLUMN a TYPE SMALLINT",
        "ALTER TABLE {t} ALTER COLUMN a TYPE STRING",
        "ALTER TABLE {t} ALTER COLUMN d TYPE DECIMAL(8,3)",
        "ALTER TABLE {t} ALTER COLUMN d TYPE DECIMAL(7,2), p TYPE BIGINT",
        "ALTER TABLE {t} ALTER COLUMN ai.element TYPE BIGINT",
        "ALTER TABLE {t} ALTER COLUMN m.value TYPE BIGINT",
        "ALTER TABLE {t} ALTER COLUMN s.x TYPE BIGINT",
        "ALTER TABLE {t} ALTER COLUMN id TYPE BIGINT",
        "ALTER TABLE {t} ALTER COLUMN g TYPE BIGINT",
        "ALTER TABLE {t} ALTER COLUMN s TYPE STRUCT<x: BIGINT, y: STRING>",
        "ALTER TABLE {t} ALTER COLUMN ai TYPE ARRAY<BIGINT>",
        "INSERT INTO {t} (id, a, s, ai, m, d, p) VALUES (2, 3000000000, named_struct('x', 4, 'y', 'z'),"
        " array(5000000000), map('k', 6000000000), 1234.567, 9)",
    ]
    ours, theirs, outcomes = _same_as_deltaspark(spark, deltaspark, tmp_path, script)
    assert [o[1] if o else None for o in outcomes[2:4]] == ["DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"] * 2
    assert [o[1] if o else None for o in outcomes[15:18]] == [
        "DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE",
        "DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE",
        "DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH",
    ]
    _read_alike(spark, deltaspark, ours, theirs)


def test_change_column_refusals_as_deltaspark(spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path) -> None:
    """What Spark's grammar and analysis and delta-spark refuse, refused with the same error
    classes and exception types, and nothing committed."""
    script = [
        "CREATE TABLE {t} (id INT, a INT NOT NULL, s STRUCT<x: INT, y: STRING>, arr ARRAY<INT>, m MAP<STRING, INT>,"
        " p STRING) USING delta PARTITIONED BY (p)",
        "ALTER TABLE {t} CHANGE COLUMN id ident INT",
        "ALTER TABLE {t} CHANGE COLUMN s.x z INT",
        "ALTER TABLE {t} CHANGE COLUMN id id INT NOT NULL",
        "ALTER TABLE {t} PARTITION (p = 'x') CHANGE COLUMN id id INT",
        "ALTER TABLE {t} ALTER COLUMN id",
        "ALTER TABLE {t} ALTER COLUMN id SET NOT NULL",
        "ALTER TABLE {t} ALTER COLUMN id TYPE BIGINT",
        "ALTER TABLE {t} ALTER COLUMN a TYPE SMALLINT",
        "ALTER TABLE {t} CHANGE COLUMN s s STRUCT<x: INT, y: STRING, z: INT>",
        "ALTER TABLE {t} CHANGE COLUMN m m MAP<STRING, BIGINT>",
        "ALTER TABLE {t} CHANGE COLUMN arr arr ARRAY<BIGINT>",
        "ALTER TABLE {t} ALTER COLUMN id COMMENT 'one', id FIRST",
        "ALTER TABLE {t} ALTER COLUMN Id COMMENT 'one', id FIRST",
        "ALTER TABLE {t} ALTER COLUMN s COMMENT 'parent', s.x FIRST",
        "ALTER TABLE {t} ALTER COLUMN nope FIRST",
        "ALTER TABLE {t} ALTER COLUMN s.nope COMMENT 'x'",
        "ALTER TABLE {t} ALTER COLUMN id AFTER nope",
        "ALTER TABLE {t} ALTER COLUMN s.x AFTER id",
        "ALTER TABLE {t} ALTER COLUMN id.x COMMENT 'x'",
        "ALTER TABLE {t} ALTER COLUMN arr.element COMMENT 'x'",
        "ALTER TABLE {t} ALTER COLUMN m.key COMMENT 'x'",
        "ALTER TABLE {t} ALTER COLUMN id SET DEFAULT 3",
        "ALTER TABLE {t} ALTER COLUMN id SYNC IDENTITY",
        "ALTER TABLE {t} ALTER COLUMN id COMMENT 'fine', a SET NOT NULL, s.y FIRST",
    ]
    ours, _, outcomes = _same_as_deltaspark(spark, deltaspark, tmp_path, script)
    assert outcomes[0] is None and None not in outcomes[1:-1]
    assert outcomes[1] == ("ParseException", "_LEGACY_ERROR_TEMP_0034")
    assert len(_commits(ours)) == 2  # the CREATE and the last statement: SET NOT NULL on a NOT NULL column is allowed


def test_add_columns_at_positions_as_deltaspark(spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path) -> None:
    """ADD COLUMNS with FIRST / AFTER, at the top and in a struct, one after another, with
    delta-spark's parameters."""
    script = [
        "CREATE TABLE {t} (id INT, s STRUCT<x: INT, y: INT>) USING delta",
        "ALTER TABLE {t} ADD COLUMNS (c1 INT FIRST, c2 STRING COMMENT 'two' AFTER ID, s.w INT AFTER x, c3 INT AFTER c1)",
        "ALTER TABLE {t} ADD COLUMN c4 DECIMAL(10,2)",
        "ALTER TABLE {t} ADD COLUMNS (c5 INT AFTER nope)",
    ]
    ours, theirs, outcomes = _same_as_deltaspark(spark, deltaspark, tmp_path, script)
    assert outcomes[-1] == ("AnalysisException", "FIELD_NOT_FOUND")
    _read_alike(spark, deltaspark, ours, theirs)


def test_other_alter_forms_on_delta_tables_are_refused_not_left_to_spark(
    spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path
) -> None:
    """Partition management, SerDe properties and partition locations, refused as delta-spark
    refuses them; REPLACE COLUMNS and forms Spark's grammar lacks, refused by name. None reaches
    Spark, which would change only the catalog entry."""
    script = [
        "CREATE TABLE {t} (id INT, p INT) USING delta PARTITIONED BY (p)",
        "ALTER TABLE {t} ADD PARTITION (p = 1)",
        "ALTER TABLE {t} DROP IF EXISTS PARTITION (p = 1)",
        "ALTER TABLE {t} PARTITION (p = 1) RENAME TO PARTITION (p = 2)",
        "ALTER TABLE {t} RECOVER PARTITIONS",
        "ALTER TABLE {t} SET SERDEPROPERTIES ('a' = 'b')",
        "ALTER TABLE {t} PARTITION (p = 1) SET LOCATION '/tmp/elsewhere'",
        "ALTER TABLE {t} CLUSTER BY NONE",
        "ALTER TABLE {t} CLUSTER BY (id)",
    ]
    ours, _, outcomes = _same_as_deltaspark(spark, deltaspark, tmp_path, script)
    assert None not in outcomes[1:]
    version = Table(str(ours)).latest_version()
    for statement, words in (
        ("ALTER TABLE {t} REPLACE COLUMNS (id BIGINT, p INT)", "REPLACE COLUMNS"),
        ("ALTER TABLE {t} SET OWNER TO someone", "SET OWNER"),
    ):
        with pytest.raises(DeltaAnalysisException, match=f"{words} is not supported by sparkdelta"):
            spark.sql(statement.format(t=f"delta.`{ours}`"))
    assert Table(str(ours)).latest_version() == version


def test_named_tables_rename_and_move_as_deltaspark(spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path) -> None:
    """RENAME TO and SET LOCATION change the catalog entry (nothing is committed), SET LOCATION
    only to a Delta table with the same schema, neither on a path, as in delta-spark."""
    spark.sql("CREATE TABLE alter_named (a BIGINT, b STRING NOT NULL) USING delta")
    try:
        spark.sql("INSERT INTO alter_named VALUES (1, 'x')")
        spark.sql("ALTER TABLE alter_named CHANGE COLUMN a a BIGINT AFTER b")
        spark.sql("ALTER TABLE alter_named RENAME TO alter_renamed")
        assert not spark.catalog.tableExists("alter_named")
        location = spark.sql("DESCRIBE DETAIL alter_renamed").collect()[0]["location"]
        assert location.endswith("/alter_renamed")
        assert [tuple(r) for r in spark.table("alter_renamed").collect()] == [("x", 1)]
        same, other = str(tmp_path / "same"), str(tmp_path / "other")
        spark.createDataFrame([("y", 2)], "b string, a bigint").write.format("delta").save(other)
        with pytest.raises(DeltaAnalysisException) as mismatch:
            spark.sql(f"ALTER TABLE alter_renamed SET LOCATION '{other}'")  # b is NOT NULL in alter_renamed
        spark.sql("ALTER TABLE alter_renamed ALTER COLUMN b DROP NOT NULL")
        with pytest.raises(DeltaAnalysisException) as missing:
            spark.sql(f"ALTER TABLE alter_renamed SET LOCATION '{same}'")
        spark.sql(f"ALTER TABLE alter_renamed SET LOCATION '{other}'")
        assert [tuple(r) for r in spark.table("alter_renamed").collect()] == [("y", 2)]
        assert Table(other).latest_version() == 0
        with pytest.raises(DeltaAnalysisException) as on_path:
            spark.sql(f"ALTER TABLE delta.`{other}` SET LOCATION '{location}'")
    finally:
        spark.sql("DROP TABLE IF EXISTS alter_named")
        spark.sql("DROP TABLE IF EXISTS alter_renamed")
    theirs = deltaspark.run(
        """
spark.sql("CREATE TABLE alter_named (a BIGINT, b STRING NOT NULL) USING delta")
spark.createDataFrame([("y", 2)], "b string, a bigint").write.format("delta").save(other)
result = []
for statement in statements:
    try:
        spark.sql(statement)
        result.append(None)
    except Exception as error:
        result.append(error.getCondition())
spark.sql("DROP TABLE alter_named")
""",
        other=str(tmp_path / "their_other"),
        statements=[
            "ALTER TABLE alter_named CHANGE COLUMN a a BIGINT AFTER b",
            f"ALTER TABLE alter_named SET LOCATION '{tmp_path / 'their_other'}'",
            f"ALTER TABLE alter_named SET LOCATION '{tmp_path / 'nothing'}'",
            f"ALTER TABLE delta.`{tmp_path / 'their_other'}` SET LOCATION '{tmp_path}'",
        ],
    )
    assert theirs == [None, mismatch.value.getCondition(), missing.value.getCondition(), on_path.value.getCondition()]
    assert theirs[1:] == [
        "DELTA_SET_LOCATION_SCHEMA_MISMATCH",
        "DELTA_MISSING_DELTA_TABLE",
        "DELTA_CANNOT_SET_LOCATION_ON_PATH_IDENTIFIER",
    ]


def test_change_column_on_other_formats_is_sparks(spark: SparkSession) -> None:
    """A table that is not Delta keeps Spark's own ALTER TABLE."""
    spark.sql("CREATE TABLE plain_changed (id INT, v STRING) USING parquet")
    try:
        spark.sql("ALTER TABLE plain_changed CHANGE COLUMN v v STRING COMMENT 'spark'")
        assert spark.table("plain_changed").schema["v"].metadata == {"comment": "spark"}
    finally:
        spark.sql("DROP TABLE IF EXISTS plain_changed")


def test_properties_and_comments_as_deltaspark(spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path) -> None:
    """SET / UNSET TBLPROPERTIES and COMMENT ON TABLE: the comment is the table's description;
    keys other statements own are refused with delta-spark's errors; UNSET never fails."""
    script = [
        "CREATE TABLE {t} (id INT) USING delta",
        "COMMENT ON TABLE {t} IS 'a comment'",
        "ALTER TABLE {t} SET TBLPROPERTIES ('comment' = 'via properties', 'team' = 'taxi', 'Comment' = 'a key')",
        "ALTER TABLE {t} UNSET TBLPROPERTIES ('comment', 'nope')",
        "COMMENT ON TABLE {t} IS NULL",
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.constraints.positive' = 'id > 0')",
        "ALTER TABLE {t} SET TBLPROPERTIES ('location' = '/elsewhere')",
        "ALTER TABLE {t} SET TBLPROPERTIES ('provider' = 'parquet')",
        "ALTER TABLE {t} SET TBLPROPERTIES ('owner' = 'someone')",
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.feature.clustering' = 'supported')",
        "ALTER TABLE {t} SET TBLPROPERTIES ('clusteringColumns' = '[]')",
        "ALTER TABLE {t} UNSET TBLPROPERTIES IF EXISTS ('team')",
    ]
    _, _, outcomes = _same_as_deltaspark(spark, deltaspark, tmp_path, script)
    assert outcomes[:5] == [None] * 5 and outcomes[-1] is None
    assert [o[1] if o else None for o in outcomes[5:11]] == [
        "DELTA_ADD_CONSTRAINTS",
        "UNSUPPORTED_FEATURE.SET_TABLE_PROPERTY",
        "UNSUPPORTED_FEATURE.SET_TABLE_PROPERTY",
        "UNSUPPORTED_FEATURE.SET_TABLE_PROPERTY",
        "DELTA_ALTER_TABLE_SET_CLUSTERING_TABLE_FEATURE_NOT_ALLOWED",
        "DELTA_CANNOT_MODIFY_TABLE_PROPERTY",
    ]


def test_comment_on_a_named_table_is_its_description(spark: SparkSession) -> None:
    """COMMENT ON TABLE on a Delta table commits; on another format it stays Spark's."""
    spark.sql("CREATE TABLE commented (id INT) USING delta")
    spark.sql("CREATE TABLE commented_parquet (id INT) USING parquet")
    try:
        spark.sql("COMMENT ON TABLE commented IS 'the ids'")
        assert spark.sql("DESCRIBE DETAIL commented").first()["description"] == "the ids"
        assert _operation(spark.sql("DESCRIBE DETAIL commented").first()["location"]) == "SET TBLPROPERTIES"
        spark.sql("COMMENT ON TABLE commented_parquet IS 'spark'")
        assert spark.catalog.getTable("commented_parquet").description == "spark"
    finally:
        spark.sql("DROP TABLE IF EXISTS commented")
        spark.sql("DROP TABLE IF EXISTS commented_parquet")

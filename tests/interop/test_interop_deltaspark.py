"""Two-way conformance with delta-spark, the reference implementation (``tests/deltaspark.py``).

Each feature is a script of SQL statements, one commit each. Both implementations run the
same script on tables of their own, then:

- **delta-spark writes, sparkdelta reads**: every version of delta-spark's table reads in
  sparkdelta with the rows, schema and history delta-spark reports;
- **sparkdelta writes, delta-spark reads**: every version of sparkdelta's table reads in
  delta-spark with the rows and schema of delta-spark's own table at that version (so the
  writes mean the same), and delta-spark's ``DESCRIBE DETAIL``, ``DESCRIBE HISTORY``,
  ``table_changes`` and ``VACUUM DRY RUN`` on it answer as sparkdelta's do.

A feature sparkdelta does not write yet is refused by name, and the test says so. Where the
two differ, the test names the side PROTOCOL.md supports.
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from deltaspark import DeltaSpark, keep, plain, rows
from pyspark.sql import SparkSession

from sparkdelta.kernel import Table
from sparkdelta.kernel.checksum import mismatches, read_checksum
from sparkdelta.tables import DeltaTable


@dataclass(frozen=True)
class Feature:
    """A feature's script, and what sparkdelta does with it as a writer."""

    statements: tuple[str, ...]
    # Set when sparkdelta refuses to write the feature: words its error must contain.
    refused_by_sparkdelta: str | None = None
    change_feed: bool = False
    # Columns whose values each writer picks by itself (none so far).
    writer_chosen: tuple[str, ...] = field(default=())
    # Whether rows' ids and commit versions (``_metadata.row_id``...) must be the same at every version.
    row_ids: bool = False
    # The shuffle partitions both writers run the statements with (None: each session's own). Fresh
    # row ids follow the written files' layout, which each engine picks: alike with one partition.
    shuffle_partitions: int | None = None
    # Statements (by position) that make more than one commit, and how many.
    commits: dict[int, int] = field(default_factory=dict)

    @property
    def last_version(self) -> int:
        return sum(self.commits.get(i, 1) for i in range(len(self.statements))) - 1


FEATURES: dict[str, Feature] = {
    "partitioning": Feature(
        (
            "CREATE TABLE {t} (id INT, p STRING, v DOUBLE) USING delta PARTITIONED BY (p)"
            " TBLPROPERTIES ('delta.checkpointInterval'='3')",
            "INSERT INTO {t} VALUES (1,'a',1.0),(2,'b',2.0),(3,NULL,3.0),(4,'a b/c=d%',4.0)",
            "INSERT INTO {t} VALUES (5,'a',5.0),(6,'é',6.0)",
            "DELETE FROM {t} WHERE p = 'a'",
            "UPDATE {t} SET v = v * 10 WHERE id > 2",
        )
    ),
    "column_mapping_name": Feature(
        (
            "CREATE TABLE {t} (id INT, name STRING, amount DOUBLE) USING delta TBLPROPERTIES ('delta.columnMapping.mode'='name')",
            "INSERT INTO {t} VALUES (1,'x',1.5),(2,'y',2.5)",
            "ALTER TABLE {t} RENAME COLUMN name TO label",
            "INSERT INTO {t} VALUES (3,'z',3.5)",
            "ALTER TABLE {t} DROP COLUMN amount",
            "ALTER TABLE {t} ADD COLUMNS (amount STRING)",
            "INSERT INTO {t} VALUES (4,'w','new')",
        )
    ),
    "column_mapping_id": Feature(
        (
            "CREATE TABLE {t} (id INT, name STRING, s STRUCT<a: INT, b: STRING>) USING delta"
            " TBLPROPERTIES ('delta.columnMapping.mode'='id')",
            "INSERT INTO {t} VALUES (1,'x',named_struct('a',1,'b','p')),(2,'y',NULL)",
            "ALTER TABLE {t} RENAME COLUMN name TO label",
            "ALTER TABLE {t} DROP COLUMN s",
            "INSERT INTO {t} VALUES (3,'z')",
        )
    ),
    # Nested NOT NULL fields: UPDATE and MERGE rebuild the struct, and the write keeps the constraint.
    "nested_not_null": Feature(
        (
            "CREATE TABLE {t} (id INT, s STRUCT<a: INT NOT NULL, b: STRING>, arr ARRAY<INT>) USING delta",
            "INSERT INTO {t} VALUES (1, named_struct('a', 1, 'b', 'x'), array(1)), (2, named_struct('a', 2, 'b', 'y'), NULL)",
            "UPDATE {t} SET s.b = 'z' WHERE id = 1",
            "UPDATE {t} SET id = 5 WHERE id = 2",
            "MERGE INTO {t} AS t USING (SELECT 1 AS id, named_struct('a', 7, 'b', 'm') AS s, array(2) AS arr) AS src"
            " ON t.id = src.id WHEN MATCHED THEN UPDATE SET t.s.a = src.s.a WHEN NOT MATCHED THEN INSERT *",
        )
    ),
    "deletion_vectors": Feature(
        (
            "CREATE TABLE {t} (id BIGINT, g INT, s STRING) USING delta TBLPROPERTIES ('delta.enableDeletionVectors'='true')",
            "INSERT INTO {t} SELECT id, CAST(id % 7 AS INT), CAST(id AS STRING) FROM range(0, 2000, 1, 2)",
            "DELETE FROM {t} WHERE g = 3",
            "UPDATE {t} SET s = 'u' WHERE g = 4",
            "MERGE INTO {t} AS t USING (SELECT id, CAST(id % 5 AS INT) AS g, 'm' AS s FROM range(1990, 2010)) AS src"
            " ON t.id = src.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
            "DELETE FROM {t} WHERE id % 100 = 1",
        )
    ),
    "change_data_feed": Feature(
        (
            "CREATE TABLE {t} (id INT, v STRING) USING delta TBLPROPERTIES ('delta.enableChangeDataFeed'='true')",
            "INSERT INTO {t} VALUES (1,'a'),(2,'b'),(3,'c')",
            "UPDATE {t} SET v = 'bb' WHERE id = 2",
            "DELETE FROM {t} WHERE id = 3",
            "MERGE INTO {t} AS t USING (SELECT 1 AS id, 'aa' AS v UNION ALL SELECT 4, 'd') AS s ON t.id = s.id"
            " WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        ),
        change_feed=True,
    ),
    "liquid_clustering": Feature(
        (
            "CREATE TABLE {t} (a INT, b STRING) USING delta CLUSTER BY (a)",
            "INSERT INTO {t} SELECT CAST(id % 50 AS INT), CAST(id AS STRING) FROM range(500)",
            "INSERT INTO {t} SELECT CAST(id % 13 AS INT), 'x' FROM range(100)",
            "OPTIMIZE {t}",
        )
    ),
    "v2_checkpoints": Feature(
        (
            "CREATE TABLE {t} (id INT) USING delta TBLPROPERTIES ('delta.checkpointPolicy'='v2', 'delta.checkpointInterval'='2')",
            "INSERT INTO {t} VALUES (1)",
            "INSERT INTO {t} VALUES (2)",
            "INSERT INTO {t} VALUES (3)",
            "DELETE FROM {t} WHERE id = 2",
            "INSERT INTO {t} VALUES (4)",
        )
    ),
    "type_widening": Feature(
        (
            "CREATE TABLE {t} (id INT, small SHORT, amount DECIMAL(6,2)) USING delta"
            " TBLPROPERTIES ('delta.enableTypeWidening'='true', 'delta.checkpointInterval'='4')",
            "INSERT INTO {t} VALUES (1, 10, 1.25), (3, 30, 3.5)",
            "ALTER TABLE {t} ALTER COLUMN small TYPE INT",
            "INSERT INTO {t} VALUES (2, 100000, 2.75)",
            "ALTER TABLE {t} ALTER COLUMN amount TYPE DECIMAL(10,4)",
            "ALTER TABLE {t} ALTER COLUMN small TYPE BIGINT",
            "UPDATE {t} SET amount = amount * 1000, small = small * 100000 WHERE id > 1",
            "DELETE FROM {t} WHERE small < 20",
        ),
    ),
    "timestamp_ntz": Feature(
        (
            "CREATE TABLE {t} (id INT, ts TIMESTAMP_NTZ, tz TIMESTAMP) USING delta",
            "INSERT INTO {t} VALUES (1, TIMESTAMP_NTZ'2024-03-10 02:30:00', TIMESTAMP'2024-03-10 02:30:00'), (2, NULL, NULL)",
            "DELETE FROM {t} WHERE ts > TIMESTAMP_NTZ'2024-03-10 00:00:00'",
        )
    ),
    "identity_columns": Feature(
        (
            "CREATE TABLE {t} (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 10 INCREMENT BY 5),"
            " k BIGINT GENERATED BY DEFAULT AS IDENTITY (START WITH -1 INCREMENT BY -2), v STRING) USING delta",
            "INSERT INTO {t} (v) VALUES ('a'), ('b')",
            "INSERT INTO {t} (k, v) VALUES (-100, 'c')",
            "UPDATE {t} SET v = 'bb' WHERE v = 'b'",
            "ALTER TABLE {t} ALTER COLUMN k SYNC IDENTITY",
            "INSERT INTO {t} (v) VALUES ('d')",
            "DELETE FROM {t} WHERE v = 'a'",
            "INSERT INTO {t} (v) VALUES ('e'), ('f')",
        ),
    ),
    "generated_columns": Feature(
        (
            "CREATE TABLE {t} (ts TIMESTAMP, d DATE GENERATED ALWAYS AS (CAST(ts AS DATE)), v INT) USING delta PARTITIONED BY (d)",
            "INSERT INTO {t} (ts, v) VALUES (TIMESTAMP'2024-01-01 10:00:00', 1), (TIMESTAMP'2024-01-02 11:00:00', 2)",
            "DELETE FROM {t} WHERE v = 1",
        )
    ),
    "check_constraints": Feature(
        (
            "CREATE TABLE {t} (id INT, v INT) USING delta",
            "INSERT INTO {t} VALUES (1, 5)",
            "ALTER TABLE {t} ADD CONSTRAINT positive CHECK (v > 0)",
            "INSERT INTO {t} VALUES (2, 7)",
            "ALTER TABLE {t} DROP CONSTRAINT positive",
        )
    ),
    "row_tracking": Feature(
        (
            "CREATE TABLE {t} (id INT, v STRING) USING delta TBLPROPERTIES ('delta.enableRowTracking'='true')",
            "INSERT INTO {t} VALUES (1,'a'),(2,'b'),(3,'c')",
            "INSERT INTO {t} VALUES (4,'d')",
            "UPDATE {t} SET v = 'x' WHERE id = 1",
            "DELETE FROM {t} WHERE id = 2",
            "OPTIMIZE {t}",
            "MERGE INTO {t} AS t USING (SELECT 3 AS id, 'm' AS v UNION ALL SELECT 9, 'n') AS s ON t.id = s.id"
            " WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
            "RESTORE TABLE {t} TO VERSION AS OF 4",
            "INSERT INTO {t} VALUES (5,'e')",
        ),
        row_ids=True,
    ),
    # Row tracking turned on for a table with files: delta-spark's three commits (the protocol,
    # the backfill of the files' row ids, the property), then DML with deletion vectors.
    "row_tracking_backfill": Feature(
        (
            "CREATE TABLE {t} (id BIGINT, g INT) USING delta TBLPROPERTIES ('delta.enableDeletionVectors'='true')",
            "INSERT INTO {t} SELECT id, CAST(id % 7 AS INT) FROM range(0, 300, 1, 2)",
            "DELETE FROM {t} WHERE g = 3",
            "ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableRowTracking'='true')",
            "UPDATE {t} SET g = 10 WHERE id % 10 = 1",
            "MERGE INTO {t} AS t USING (SELECT id, 0 AS g FROM range(290, 310)) AS s ON t.id = s.id"
            " WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
            "DELETE FROM {t} WHERE id % 50 = 2",
        ),
        row_ids=True,
        shuffle_partitions=1,
        commits={3: 3},
    ),
    "column_defaults": Feature(
        (
            "CREATE TABLE {t} (id INT, v STRING DEFAULT 'x', n INT DEFAULT 1 + 2) USING delta"
            " TBLPROPERTIES ('delta.feature.allowColumnDefaults'='supported')",
            "INSERT INTO {t} (id) VALUES (1)",
            "INSERT INTO {t} VALUES (2, DEFAULT, DEFAULT)",
            "ALTER TABLE {t} ALTER COLUMN v SET DEFAULT 'z'",
            "INSERT INTO {t} (id, n) VALUES (3, 30)",
            "ALTER TABLE {t} ALTER COLUMN v DROP DEFAULT",
            "ALTER TABLE {t} ADD COLUMN w INT",
            "ALTER TABLE {t} ALTER COLUMN w SET DEFAULT 42",
            "MERGE INTO {t} AS t USING (SELECT 4 AS id UNION ALL SELECT 1) AS s ON t.id = s.id"
            " WHEN MATCHED THEN UPDATE SET v = 'm' WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)",
            "UPDATE {t} SET n = DEFAULT, w = DEFAULT WHERE id = 3",
        )
    ),
    "in_commit_timestamps": Feature(
        (
            "CREATE TABLE {t} (id INT) USING delta TBLPROPERTIES ('delta.enableInCommitTimestamps'='true')",
            "INSERT INTO {t} VALUES (1)",
            "INSERT INTO {t} VALUES (2)",
        )
    ),
    "variant": Feature(
        (
            "CREATE TABLE {t} (id INT, v VARIANT, a ARRAY<VARIANT>) USING delta TBLPROPERTIES ('delta.enableChangeDataFeed'='true')",
            """INSERT INTO {t} SELECT 1, parse_json('{{"a": 1, "b": [1, 2]}}'), array(parse_json('"x"'), NULL)""",
            "INSERT INTO {t} SELECT 2, parse_json('null'), NULL",
            "INSERT INTO {t} SELECT 3, NULL, array(parse_json('[1, {{\"k\": 2.5}}]'))",
            "UPDATE {t} SET v = parse_json('{{\"a\": 7}}') WHERE id = 2",
            "DELETE FROM {t} WHERE v:a::int = 1",
        ),
        change_feed=True,
    ),
}

SHUFFLE = "spark.sql.shuffle.partitions"

READ_VERSION = """
df = spark.read.format("delta").option("versionAsOf", version).load(path)
result = (rows(df), [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields])
"""

# Every version's rows with their ids and commit versions, as delta-spark reads them (where
# row tracking is enabled: before, delta-spark has no such fields).
ROW_IDS = """
result = []
for version in range(versions):
    df = spark.read.format("delta").option("versionAsOf", version).load(path)
    try:
        result.append(rows(df.select("*", "_metadata.row_id", "_metadata.row_commit_version")))
    except Exception as error:
        if "FIELD_NOT_FOUND" not in str(error):
            raise
        result.append(("not enabled", rows(df)))
"""

HISTORY = """
result = [
    (r.version, r.operation, r.readVersion, r.isBlindAppend, r.isolationLevel)
    for r in DeltaTable.forPath(spark, path).history().orderBy("version").collect()
]
"""

DETAIL_KEYS = (
    "format",
    "id",
    "location",
    "partitionColumns",
    "clusteringColumns",
    "numFiles",
    "sizeInBytes",
    "properties",
    "minReaderVersion",
    "minWriterVersion",
    "tableFeatures",
)

DETAIL = """
detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0].asDict()
result = {key: plain(detail.get(key)) for key in keys}
"""

CHANGES = """
changes = spark.sql(f"SELECT * FROM table_changes_by_path('{path}', 0)")
result = rows(changes.drop(*dropped))
"""

# delta-spark's own validation of a table's latest checksum file against its replayed state.
CHECKSUM = """
delta_log = spark._jvm.org.apache.spark.sql.delta.DeltaLog
delta_log.clearCache()
snapshot = delta_log.forTable(spark._jsparkSession, path).unsafeVolatileSnapshot()
no_context = getattr(getattr(spark._jvm.scala.collection.immutable, "Map$"), "MODULE$").empty()
result = (snapshot.version(), snapshot.checksumOpt().isDefined(), snapshot.validateChecksum(no_context))
"""

RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
VACUUM_DRY_RUN = "VACUUM delta.`{path}` RETAIN 0 HOURS DRY RUN"

VACUUM = f"""
spark.conf.set("{RETENTION_CHECK}", "false")
try:
    result = sorted(r[0] for r in spark.sql(f"{VACUUM_DRY_RUN}").collect())
finally:
    spark.conf.unset("{RETENTION_CHECK}")
"""


class Written:
    """Tables written once per module, by either implementation, keyed by feature; and
    delta-spark's answers about its own tables, which never change once written, asked once.

    With a run-wide folder (``shared``: ``scripts/test.sh`` runs both passes with one), delta-spark's
    own tables and its answers about them are kept there by the first pass that makes them,
    and the other pass copies them: they depend on nothing sparkdelta does.
    """

    def __init__(self, root: Path, spark: SparkSession, deltaspark: DeltaSpark, shared: Path | None) -> None:
        self.root = root
        self.spark = spark
        self.deltaspark = deltaspark
        self._shared = shared
        self._done: dict[tuple[str, str], str] = {}
        self._answers: dict[str, dict[tuple[str, str], Any]] = {}

    def reference_answer(self, snippet: str, **variables: Any) -> Any:
        """delta-spark's ``snippet`` on one of its own tables (``path=``), run the first time asked."""
        path = Path(variables.pop("path"))
        assert path.parent == self.root / "delta-spark", "only delta-spark's own tables"
        answers = self._answers.setdefault(path.name, {})
        key = (snippet, repr(sorted(variables.items())))
        if key not in answers:
            answers[key] = self.deltaspark.run(snippet, path=str(path), **variables)
            assert str(self.root) not in repr(answers[key]), "an answer naming this pass's folder cannot be shared"
            if self._shared is not None:
                keep(self._shared / path.name / "answers.pickle", answers)
        return answers[key]

    def by_deltaspark(self, name: str) -> str:
        kept = None if self._shared is None or ("delta-spark", name) in self._done else self._shared / name
        if kept is not None and (kept / "answers.pickle").exists():
            path = self.root / "delta-spark" / name
            shutil.copytree(kept / "table", path)
            self._answers[name] = pickle.loads((kept / "answers.pickle").read_bytes())  # noqa: S301 - this run's
            self._done["delta-spark", name] = str(path)
            return str(path)
        run = f"""
before = spark.conf.get("{SHUFFLE}")
spark.conf.set("{SHUFFLE}", partitions or before)
try:
    spark.sql(sql)
finally:
    spark.conf.set("{SHUFFLE}", before)
"""
        partitions = FEATURES[name].shuffle_partitions
        table = self._write("delta-spark", name, lambda sql: self.deltaspark.run(run, sql=sql, partitions=partitions))
        if kept is not None:
            shutil.rmtree(kept, ignore_errors=True)  # a pass stopped between the copy and the first answer
            shutil.copytree(table, kept / "table")
        return table

    def by_sparkdelta(self, name: str) -> str:
        partitions = FEATURES[name].shuffle_partitions

        def run(sql: str) -> None:
            before = self.spark.conf.get(SHUFFLE)
            self.spark.conf.set(SHUFFLE, partitions or before)
            try:
                self.spark.sql(sql)
            finally:
                self.spark.conf.set(SHUFFLE, before)

        return self._write("sparkdelta", name, run if partitions else self.spark.sql)

    def _write(self, writer: str, name: str, run: Callable[[str], Any]) -> str:
        if (writer, name) not in self._done:
            path = str(self.root / writer / name)
            for statement in FEATURES[name].statements:
                run(statement.format(t=f"delta.`{path}`"))
            self._done[writer, name] = path
        return self._done[writer, name]


@pytest.fixture(scope="module")
def written(
    spark: SparkSession, deltaspark: DeltaSpark, tmp_path_factory: pytest.TempPathFactory, run_folder: Path | None
) -> Written:
    shared = None if run_folder is None else run_folder / "interop-deltaspark" / deltaspark.spark_version
    if shared is not None:
        shared.mkdir(parents=True, exist_ok=True)
    return Written(tmp_path_factory.mktemp("conformance"), spark, deltaspark, shared)


def ours_at(spark: SparkSession, path: str, version: int) -> tuple[list[tuple[Any, ...]], list[tuple[str, str, bool]]]:
    df = spark.read.format("delta").option("versionAsOf", version).load(path)
    return rows(df), [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields]


def our_history(spark: SparkSession, path: str) -> list[tuple[Any, ...]]:
    history = DeltaTable.forPath(spark, path).history().orderBy("version").collect()
    return [(r.version, r.operation, r.readVersion, r.isBlindAppend, r.isolationLevel) for r in history]


def our_detail(spark: SparkSession, path: str) -> dict[str, Any]:
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0].asDict()
    return {key: plain(detail.get(key)) for key in DETAIL_KEYS}


def our_changes(spark: SparkSession, path: str, dropped: tuple[str, ...] = ()) -> list[tuple[Any, ...]]:
    changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(path)
    return rows(changes.drop(*dropped))


def our_vacuum_dry_run(spark: SparkSession, path: str) -> list[str]:
    spark.conf.set(RETENTION_CHECK, "false")
    try:
        return sorted(r[0] for r in spark.sql(VACUUM_DRY_RUN.format(path=path)).collect())
    finally:
        spark.conf.unset(RETENTION_CHECK)


def assert_same_answers(spark: SparkSession, deltaspark: DeltaSpark, path: str, feature: Feature) -> None:
    """sparkdelta and delta-spark describe the same table alike: detail, change feed, vacuum."""
    theirs = deltaspark.run(DETAIL, path=path, keys=DETAIL_KEYS)
    ours = our_detail(spark, path)
    for key in ("tableFeatures", "partitionColumns", "clusteringColumns"):
        theirs[key], ours[key] = sorted(theirs[key] or []), sorted(ours[key] or [])
    assert ours == theirs, "DESCRIBE DETAIL"
    if feature.change_feed:
        assert our_changes(spark, path) == deltaspark.run(CHANGES, path=path, dropped=()), "table_changes"
    assert our_vacuum_dry_run(spark, path) == deltaspark.run(VACUUM, path=path), "VACUUM DRY RUN"


def latest_version(path: str) -> int:
    return Table(path).snapshot().version


# On Connect, sparkdelta's reads of each feature it writes are checked in the other
# direction (test_sparkdelta_writes_deltaspark_reads reads its table there); what this one
# adds is a log and files delta-spark wrote, which the kernel reads alike on both kinds of
# session. The features sparkdelta refuses to write are read only here, so they stay.
READ_CASES = [
    pytest.param(name, marks=[] if feature.refused_by_sparkdelta else [pytest.mark.classic_only])
    for name, feature in FEATURES.items()
]


@pytest.mark.parametrize("name", READ_CASES)
def test_deltaspark_writes_sparkdelta_reads(name: str, spark: SparkSession, deltaspark: DeltaSpark, written: Written) -> None:
    path = written.by_deltaspark(name)
    last = latest_version(path)
    assert last == FEATURES[name].last_version, "one commit per statement, or as many as the feature says"
    checked = 0
    for version in range(last + 1):
        theirs = written.reference_answer(READ_VERSION, path=path, version=version)
        assert ours_at(spark, path, version) == theirs, f"{name} at version {version}"
        recorded = read_checksum(Table(path).storage, path, version)  # delta-spark writes none for some (RESTORE)
        if recorded is not None:
            assert mismatches(Table(path).snapshot(version), recorded) == [], f"{name}'s checksum of version {version}"
            checked += 1
    assert checked, "delta-spark's checksums are read and agree"
    assert our_history(spark, path) == written.reference_answer(HISTORY, path=path)
    assert_same_answers(spark, deltaspark, path, FEATURES[name])


@pytest.mark.parametrize("name", list(FEATURES))
def test_sparkdelta_writes_deltaspark_reads(name: str, spark: SparkSession, deltaspark: DeltaSpark, written: Written) -> None:
    feature = FEATURES[name]
    if feature.refused_by_sparkdelta is not None:
        with pytest.raises(Exception, match=feature.refused_by_sparkdelta):
            written.by_sparkdelta(name)
        return
    ours = written.by_sparkdelta(name)
    reference = written.by_deltaspark(name)
    assert latest_version(ours) == latest_version(reference)
    for version in range(latest_version(ours) + 1):
        same_protocol = Table(ours).snapshot(version).protocol == Table(reference).snapshot(version).protocol
        assert same_protocol, f"{name}: the protocol delta-spark writes at {version}"
        theirs_of_ours = deltaspark.run(READ_VERSION, path=ours, version=version)
        assert theirs_of_ours == written.reference_answer(READ_VERSION, path=reference, version=version), f"{name} at {version}"
        assert ours_at(spark, ours, version) == theirs_of_ours
    if feature.row_ids:
        versions = latest_version(ours) + 1
        same_ids = deltaspark.run(ROW_IDS, path=ours, versions=versions)
        assert same_ids == written.reference_answer(ROW_IDS, path=reference, versions=versions), "the same row ids"
    assert deltaspark.run(CHECKSUM, path=ours) == (latest_version(ours), True, True), "delta-spark validates our checksum"
    history = deltaspark.run(HISTORY, path=ours)
    assert our_history(spark, ours) == history, "both read sparkdelta's history the same"
    assert history == written.reference_answer(HISTORY, path=reference), "sparkdelta's commits say what delta-spark's say"
    assert_same_answers(spark, deltaspark, ours, feature)
    if feature.change_feed:
        untimed = ("_commit_timestamp",)  # two tables, committed at different times
        ours_recorded = our_changes(spark, ours, dropped=untimed)
        assert ours_recorded == written.reference_answer(CHANGES, path=reference, dropped=untimed), "the same changes recorded"


def test_variant_paths_in_sql_read_as_in_deltaspark(spark: SparkSession, deltaspark: DeltaSpark, written: Written) -> None:
    """Spark 4's ``v:path`` syntax on a Delta path; a JSON path on a string stays a JSON path."""
    path = written.by_deltaspark("variant")
    query = (
        f"SELECT id, v:a::int AS a, v:b[1] AS b1, get_json_object(to_json(v), '$.b[0]') AS b0 FROM delta.`{path}` VERSION AS OF 2"
    )
    assert rows(spark.sql(query)) == deltaspark.sql_rows(query) == [(1, 1, ("variant", "2"), "1"), (2, None, None, None)]


def test_type_changes_are_recorded_as_deltaspark_records_them(written: Written) -> None:
    """ALTER COLUMN ... TYPE: the same field metadata (``delta.typeChanges``) and protocol in both logs."""
    ours, theirs = (
        Table(written.by_sparkdelta("type_widening")).snapshot(),
        Table(written.by_deltaspark("type_widening")).snapshot(),
    )
    assert json.loads(ours.metadata.schema_string) == json.loads(theirs.metadata.schema_string)
    assert {"typeWidening"} <= ours.protocol.reader_features == theirs.protocol.reader_features


FOR_PATH = """
try:
    result = ("ok", DeltaTable.forPath(spark, path, conf).toDF().count())
except Exception as error:
    result = ("error", error.getCondition())
"""


def test_for_path_takes_the_hadoop_conf_deltaspark_takes(spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path) -> None:
    """``forPath(spark, path, hadoopConf)``: ``fs.`` and ``dfs.`` keys are taken (here, for a
    local table, without effect), any other key is refused with delta-spark's error class."""
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    for conf in ({"fs.s3a.endpoint": "http://127.0.0.1:9", "dfs.replication": "1"}, {"spark.hadoop.fs.s3a.endpoint": "x"}):
        try:
            ours: tuple[str, Any] = ("ok", DeltaTable.forPath(spark, path, conf).toDF().count())
        except Exception as error:  # noqa: BLE001 - the error class is what is compared
            ours = ("error", getattr(error, "getCondition", lambda: None)())
        assert ours == deltaspark.run(FOR_PATH, path=path, conf=conf)
    assert ours == ("error", "DELTA_TABLE_FOR_PATH_UNSUPPORTED_HADOOP_CONF")


ERROR_CLASS = """
try:
    spark.sql(sql)
    result = None
except Exception as error:
    result = error.getCondition()
"""


def test_column_defaults_are_refused_where_deltaspark_refuses_them(
    spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path
) -> None:
    """A DEFAULT without the feature enabled, and ADD COLUMN with a DEFAULT: delta-spark's error classes."""
    statements = [  # (table, statement): a refused CREATE leaves a table behind in delta-spark
        ("refused", "CREATE TABLE {t} (id INT, v STRING DEFAULT 'x') USING delta"),
        ("t", "CREATE TABLE {t} (id INT) USING delta"),
        ("t", "ALTER TABLE {t} ALTER COLUMN id SET DEFAULT 3"),
        ("t", "ALTER TABLE {t} SET TBLPROPERTIES ('delta.feature.allowColumnDefaults'='supported')"),
        ("t", "ALTER TABLE {t} ADD COLUMN w INT DEFAULT 42"),
    ]
    ours: list[str | None] = []
    theirs: list[str | None] = []
    for table, statement in statements:
        try:
            spark.sql(statement.format(t=f"delta.`{tmp_path / 'ours' / table}`")).collect()
            ours.append(None)
        except Exception as error:  # noqa: BLE001 - the error class is what is compared
            ours.append(getattr(error, "getCondition", lambda: None)())
        theirs.append(deltaspark.run(ERROR_CLASS, sql=statement.format(t=f"delta.`{tmp_path / 'theirs' / table}`")))
    assert ours == theirs == [
        "WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED",
        None,
        "WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED",
        None,
        "WRONG_COLUMN_DEFAULTS_FOR_DELTA_ALTER_TABLE_ADD_COLUMN_NOT_SUPPORTED",
    ]

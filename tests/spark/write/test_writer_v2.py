"""``df.writeTo(table)`` (Spark's DataFrameWriterV2) on Delta tables, against delta-spark.

Each scenario is a list of pyspark snippets that both implementations run on tables of
their own (``t``: a path identifier ``delta.`/path``` or a catalog name). A step that fails
must fail in both with the same error class and change nothing. Then both describe their
table alike: the rows and schema of every version, ``DESCRIBE HISTORY`` (operations, their
parameters, read versions, blind appends, user metadata) and ``DESCRIBE DETAIL``
(partitioning, clustering, properties, description, protocol).
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from deltaspark import DeltaSpark, DeltaSparkError, plain, rows
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.functions import partitioning as PF  # noqa: N812

from sparkdelta.exceptions import DeltaAnalysisException
from sparkdelta.kernel import Table
from sparkdelta.tables import DeltaTable

# Run before every step, in both implementations.
PRELUDE = """
from pyspark.sql import functions as F
from pyspark.sql.functions import partitioning as PF
df = spark.createDataFrame(
    [(1, "a", 10, "x"), (2, "b", 20, "y"), (3, "a", 30, "z"), (4, None, 40, "w")], "id INT, p STRING, v INT, s STRING"
)
"""


@dataclass(frozen=True)
class Step:
    """A snippet; ``error`` is the error class both implementations must raise (changing nothing)."""

    code: str
    error: str | None = None


CREATE_APPEND_OVERWRITE = (
    Step(
        'df.writeTo(t).using("delta").partitionedBy("p").tableProperty("comment", "v2 table")'
        '.tableProperty("team", "ops").option("delta.appendOnly", "false").option("userMetadata", "ignored").create()'
    ),
    Step('df.writeTo(t).using("delta").create()', error="TABLE_OR_VIEW_ALREADY_EXISTS"),
    Step('df.writeTo(t).option("userMetadata", "second").append()'),
    Step("""df.where("p = 'a'").writeTo(t).overwrite(F.col("p") == "a")"""),
    Step('df.where("v > 15").withColumn("v", F.col("v") + 100).writeTo(t).overwrite(F.col("v") > 15)'),
    Step('df.writeTo(t).overwrite(F.col("v") > 15)', error="DELTA_REPLACE_WHERE_MISMATCH"),
    Step(
        'spark.conf.set("spark.databricks.delta.replaceWhere.constraintCheck.enabled", "false")\n'
        "try:\n"
        '    df.writeTo(t).overwrite(F.col("v") > 15)\n'
        "finally:\n"
        '    spark.conf.unset("spark.databricks.delta.replaceWhere.constraintCheck.enabled")'
    ),
    Step(
        """df.writeTo(t).option("replaceWhere", "p = 'a'").overwrite(F.col("p") == "a")""",
        error="DELTA_REPLACE_WHERE_IN_OVERWRITE",
    ),
    Step("""df.where("p = 'b'").withColumn("s", F.lit("dyn")).writeTo(t).overwritePartitions()"""),
    Step(
        """df.writeTo(t).option("replaceWhere", "p = 'a'").overwritePartitions()""",
        error="DELTA_REPLACE_WHERE_WITH_DYNAMIC_PARTITION_OVERWRITE",
    ),
    Step('df.withColumn("extra", F.lit(1.5)).writeTo(t).option("mergeSchema", "true").append()'),
    Step('df.select("s", "id", "v").writeTo(t).append()'),
    Step('df.withColumn("zzz", F.lit(1)).writeTo(t).append()', error="DELTA_METADATA_MISMATCH"),
    Step('df.writeTo(t).option("txnAppId", "app").option("txnVersion", 1).append()'),
    Step('df.writeTo(t).option("txnAppId", "app").option("txnVersion", 1).append()'),
    Step("""df.where("id < 3").writeTo(t).overwrite(F.lit(True))"""),
)

REPLACE = (
    Step(
        'df.writeTo(t).using("delta").partitionedBy("p").tableProperty("delta.enableChangeDataFeed", "true")'
        '.tableProperty("comment", "first").create()'
    ),
    Step('df.select("id", "s").writeTo(t).using("delta").tableProperty("x", "y").option("userMetadata", "no").replace()'),
    Step('df.writeTo(t).using("delta").partitionedBy("P", "s").createOrReplace()'),
    Step(
        'df.withColumn("ts", F.to_timestamp(F.lit("2024-01-01 00:00:00"))).writeTo(t).using("delta")'
        '.partitionedBy(PF.years("ts")).replace()',
        error="DELTA_OPERATION_NOT_ALLOWED",
    ),
    Step('df.writeTo(t).using("delta").partitionedBy(PF.bucket(4, "id")).replace()', error="DELTA_OPERATION_NOT_ALLOWED_DETAIL"),
    Step('df.select("p").writeTo(t).using("delta").partitionedBy("p").replace()', error="ALL_PARTITION_COLUMNS_NOT_ALLOWED"),
    Step(
        'spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", "from the session")\n'
        "try:\n"
        '    df.writeTo(t).using("delta").tableProperty("delta.appendOnly", "true").replace()\n'
        "finally:\n"
        '    spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")'
    ),
)

CREATE_OR_REPLACE_NEW = (
    Step('df.writeTo(t).using("delta").tableProperty("delta.columnMapping.mode", "name").createOrReplace()'),
    Step('df.where("id = 1").writeTo(t).overwritePartitions()'),  # unpartitioned: the whole table
    Step('df.writeTo(t).using("delta").createOrReplace()'),  # column mapping goes with the old table
    Step('df.writeTo(t).option("partitionOverwriteMode", "dynamic").option("overwriteSchema", "true").append()'),
)

VARIANTS = (
    Step("""df.selectExpr("id", "parse_json(concat('{\\"a\\": ', id, '}')) AS j").writeTo(t).using("delta").create()"""),
    Step("""df.selectExpr("id", "parse_json(concat('[', v, ']')) AS j").writeTo(t).append()"""),
    Step("""df.where("id > 2").selectExpr("id", "parse_json('null') AS j").writeTo(t).overwrite(F.col("id") > 2)"""),
)

NAMED = (
    Step('df.writeTo(t).using("delta").partitionedBy("p").create()'),
    Step("df.writeTo(t).create()", error="TABLE_OR_VIEW_ALREADY_EXISTS"),
    Step("df.writeTo(t).append()"),
    Step(
        """df.where("p = 'a'").write.format("delta").mode("overwrite")"""
        """.option("partitionOverwriteMode", "dynamic").saveAsTable(t)"""
    ),
    Step("df.writeTo(t).createOrReplace()", error="UNSUPPORTED_FEATURE.TABLE_OPERATION"),
    Step('df.select("id", "v").writeTo(t).using("delta").replace()'),
    Step('df.select("id", "v").writeTo(t).overwritePartitions()'),
    Step('df.writeTo(t).using("delta").tableProperty("comment", "again").createOrReplace()'),
)

# DataFrameWriter's writes share the WRITE commit: its parameters are delta-spark's too.
DATAFRAME_WRITER = (
    Step('df.write.format("delta").partitionBy("P").save(path)'),
    Step('df.write.format("delta").mode("append").save(path)'),
    Step("""df.where("p = 'a'").write.format("delta").mode("overwrite").option("replaceWhere", "p = 'a'").save(path)"""),
    Step(
        """df.where("p = 'b'").write.format("delta").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(path)"""
    ),
    Step(
        """df.write.format("delta").mode("overwrite").option("replaceWhere", "p = 'a'")"""
        """.option("partitionOverwriteMode", "dynamic").save(path)""",
        error="DELTA_REPLACE_WHERE_WITH_DYNAMIC_PARTITION_OVERWRITE",
    ),
    Step('df.withColumn("e", F.lit(1)).write.format("delta").mode("append").option("mergeSchema", "true").save(path)'),
    Step('df.write.format("delta").mode("overwrite").option("overwriteSchema", "true").partitionBy("s").save(path)'),
    Step(
        'df.select("p").write.format("delta").partitionBy("p").save(path + "_all")',
        error="DELTA_CANNOT_USE_ALL_COLUMNS_FOR_PARTITION",
    ),
)
DATAFRAME_WRITER_UNPARTITIONED = (
    Step('df.write.format("delta").save(path)'),
    Step('df.where("id = 1").write.format("delta").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(path)'),
)

# SQL's table statements on Delta: CTAS and RTAS are the writer's table statements (one commit,
# a replace making a new table id), a DataFrame's saveAsTable overwrite keeps the id.
SQL_AS_SELECT = (
    Step("""df.createOrReplaceTempView("src")
spark.sql(f"CREATE TABLE {t} USING delta COMMENT 'c' TBLPROPERTIES ('k'='v') AS SELECT * FROM src")"""),
    Step("""spark.sql(f"CREATE TABLE IF NOT EXISTS {t} USING delta AS SELECT 1 AS x")"""),
    Step("""spark.sql(f"CREATE TABLE {t} USING delta AS SELECT 1 AS x")""", error="TABLE_OR_VIEW_ALREADY_EXISTS"),
    Step("""df.createOrReplaceTempView("src")
spark.sql(f"CREATE OR REPLACE TABLE {t} USING delta PARTITIONED BY (p) AS SELECT * FROM src")"""),
    Step("""df.createOrReplaceTempView("src")
spark.sql(f"REPLACE TABLE {t} USING delta TBLPROPERTIES ('delta.enableChangeDataFeed'='true') AS SELECT id, v FROM src")"""),
    Step(
        """missing = t[:-1] + "_missing`" if t.endswith("`") else t + "_missing"
spark.sql(f"REPLACE TABLE {missing} USING delta AS SELECT 1 AS x")""",
        error="TABLE_OR_VIEW_NOT_FOUND",
    ),
)
# delta-spark 4.4 fails some replaces of a managed table with INTERNAL_ERROR ("Executed replace
# failed": REPLACE TABLE ... AS SELECT, and any replace once the table has a comment), so the
# named scenario has steps of its own. (An UPDATE there records its predicate with Spark's
# expression ids, ``(id#43902 = 1)``: the interop matrix's nested_not_null runs UPDATEs.)
SQL_NAMED = (
    Step("""df.createOrReplaceTempView("src")
spark.sql(f"CREATE TABLE {t} USING delta AS SELECT * FROM src")"""),
    Step("""spark.sql(f"CREATE TABLE IF NOT EXISTS {t} USING delta AS SELECT 1 AS x")"""),
    SQL_AS_SELECT[2],
    SQL_AS_SELECT[5],
    Step('df.write.format("delta").mode("overwrite").saveAsTable(t)'),
    Step("""df.createOrReplaceTempView("src")
spark.sql(f"CREATE OR REPLACE TABLE {t} USING delta AS SELECT id, v FROM src")"""),
    Step('df.write.format("delta").mode("overwrite").option("overwriteSchema", "true").saveAsTable(t)'),
    Step("""spark.sql(f"CREATE OR REPLACE TABLE {t} (id INT, s STRUCT<a: INT NOT NULL, b: STRING>) USING delta")"""),
    Step("""spark.sql(f"INSERT INTO {t} VALUES (1, named_struct('a', 1, 'b', 'x')), (2, named_struct('a', 2, 'b', 'y'))")"""),
    Step("""spark.sql(f"UPDATE {t} SET s.a = NULL WHERE id = 2")""", error="DELTA_NOT_NULL_CONSTRAINT_VIOLATED"),
)

# A table statement's columns against a table already at the location (delta-spark 4.4): a path
# table's createIfNotExists needs no match, its replace does, as does a new name for it.
SCHEMA_CHECKS = (
    Step('df.write.format("delta").save(path)'),
    Step('DeltaTable.createIfNotExists(spark).location(path).addColumn("x", "INT").execute()'),
    Step(
        'DeltaTable.createOrReplace(spark).location(path).addColumn("x", "INT").execute()',
        error="DELTA_CREATE_TABLE_SCHEME_MISMATCH",
    ),
    Step('spark.sql(f"CREATE OR REPLACE TABLE {t} (x INT) USING delta")', error="DELTA_CREATE_TABLE_SCHEME_MISMATCH"),
    Step(
        'DeltaTable.createIfNotExists(spark).tableName(f"named_{abs(hash(path))}").location(path)'
        '.addColumn("x", "INT").execute()',
        error="DELTA_CREATE_TABLE_SCHEME_MISMATCH",
    ),
)

# name: (steps, the kind of target)
SCENARIOS = {
    "create_append_overwrite": (CREATE_APPEND_OVERWRITE, "path"),
    "replace": (REPLACE, "path"),
    "create_or_replace_new": (CREATE_OR_REPLACE_NEW, "path"),
    "variants": (VARIANTS, "path"),
    "named_managed": (NAMED, "name"),
    "dataframe_writer": (DATAFRAME_WRITER, "path"),
    "dataframe_writer_unpartitioned": (DATAFRAME_WRITER_UNPARTITIONED, "path"),
    "named_external": ((Step('df.writeTo(t).using("delta").tableProperty("location", loc).create()'), *NAMED[2:]), "name"),
    "sql_as_select_path": (SQL_AS_SELECT, "path"),
    "sql_as_select_named": (SQL_NAMED, "name"),
    "schema_checks": (SCHEMA_CHECKS, "path"),
}

# What both implementations say of a table: every version, history and detail.
STATE = """
def _at(version):
    reader = spark.read.format("delta").option("versionAsOf", version)
    return reader.load(ref) if is_path else reader.table(ref)

table = DeltaTable.forPath(spark, ref) if is_path else DeltaTable.forName(spark, ref)
history = table.history().orderBy("version").collect()
versions = []
for h in history:
    at = _at(h.version)
    versions.append((rows(at), [(f.name, f.dataType.simpleString(), f.nullable) for f in at.schema.fields]))
detail = spark.sql(f"DESCRIBE DETAIL {ident}").collect()[0].asDict()
import json as _json, os as _os
_log = detail["location"].removeprefix("file:") + "/_delta_log"
new_ids, _last = [], None
for _name in sorted(n for n in _os.listdir(_log) if n.endswith(".json")):
    for _line in open(_os.path.join(_log, _name)):
        _id = _json.loads(_line).get("metaData", {}).get("id")
        if _id is not None and _id != _last:
            new_ids.append(int(_name.split(".")[0]))
            _last = _id
result = {
    "new_ids": new_ids,
    "history": [
        (h.version, h.operation, plain(h.operationParameters), h.readVersion, h.isBlindAppend, h.userMetadata,
         sorted(h.operationMetrics or {}))
        for h in history
    ],
    "versions": versions,
    "detail": {key: plain(detail.get(key)) for key in keys},
}
"""
# delta-spark's side of a scenario, in one round trip: each step in a scope of its own (as
# ours runs it), the error class it failed with or None, then its table's state (STATE). It
# depends on nothing sparkdelta does, so the other pass of a run reuses it (DeltaSpark.answer).
THEIRS = """
import re
t, ref = (f"delta.`{path}`", path) if kind == "path" else (name, name)
failures = []
for step in steps:
    scope = {"spark": spark, "DeltaTable": DeltaTable, "F": F, "rows": rows, "plain": plain}
    try:
        exec(prelude + step, scope | {"t": t, "path": path, "loc": path + "_external"})
        failures.append(None)
    except Exception as exc:
        found = re.search(error_class, str(exc))  # a Py4JJavaError says it further on
        failures.append(found.group(1) if found else type(exc).__name__)
described = {"spark": spark, "DeltaTable": DeltaTable, "rows": rows, "plain": plain, "ref": ref, "ident": t}
described |= {"is_path": kind == "path", "keys": keys}
exec(state, described)
result = (failures, described["result"])
"""
DETAIL_KEYS = (
    "format",
    "partitionColumns",
    "clusteringColumns",
    "properties",
    "description",
    "minReaderVersion",
    "minWriterVersion",
    "tableFeatures",
)


def _normalized(state: dict[str, Any]) -> dict[str, Any]:
    """JSON-valued history parameters parsed (key order is no one's promise), feature lists sorted."""

    def value(v: Any) -> Any:
        return json.loads(v) if isinstance(v, str) and v[:1] in "[{" else v

    history = [(*h[:2], {k: value(v) for k, v in (h[2] or {}).items()}, *h[3:]) for h in state["history"]]
    detail = dict(state["detail"])
    for key in ("tableFeatures", "partitionColumns", "clusteringColumns"):
        detail[key] = sorted(detail[key] or [])
    return {"history": history, "versions": state["versions"], "detail": detail, "new_ids": state["new_ids"]}


def ours_run(spark: SparkSession, code: str, **scope: Any) -> Any:
    env: dict[str, Any] = {"spark": spark, "DeltaTable": DeltaTable, "rows": rows, "plain": plain, **scope}
    exec(code, env)  # noqa: S102 - the tests' own snippets
    return env.get("result")


ERROR_CLASS = r"\[([A-Z0-9_.]+)\]"


def _error_class(message: str) -> str | None:
    found = re.match(ERROR_CLASS, message)
    return found.group(1) if found else None


class Sides:
    """One scenario's tables: sparkdelta's and delta-spark's, each reached by its own identifier."""

    def __init__(self, spark: SparkSession, deltaspark: DeltaSpark, root: Path, kind: str) -> None:
        self.spark, self.deltaspark, self.kind = spark, deltaspark, kind
        suffix = uuid.uuid4().hex[:8]
        self.paths = {side: str(root / side / "t") for side in ("ours", "theirs")}
        self.our_location = str(root / "ours" / "external")  # delta-spark's is its path + "_external" (THEIRS)
        self.name = f"default.writer_v2_{suffix}"

    def ref(self, side: str) -> str:
        return self.paths[side] if self.kind == "path" else self.name

    def ident(self, side: str) -> str:
        return f"delta.`{self.paths[side]}`" if self.kind == "path" else self.name

    def ours(self, step: Step) -> str | None:
        """The error class ``step`` fails with on sparkdelta's side, or None."""
        scope = {"t": self.ident("ours"), "path": self.paths["ours"], "loc": self.our_location}
        try:
            ours_run(self.spark, PRELUDE + step.code, **scope)
        except Exception as exc:  # noqa: BLE001 - compared by the caller
            getter = getattr(exc, "getCondition", None)
            return (getter() if callable(getter) else None) or f"{type(exc).__name__}: {exc}"
        return None

    def theirs(self, steps: tuple[Step, ...], label: str) -> tuple[list[str | None], dict[str, Any]]:
        """Each step's error class on delta-spark's side, and its table's state after them (THEIRS),
        on a table named for ``label`` where the scenario names one."""
        failures, state = self.deltaspark.answer(
            THEIRS,
            Path(self.paths["theirs"]),
            steps=[step.code for step in steps],
            prelude=PRELUDE,
            state=STATE,
            kind=self.kind,
            name=f"default.writer_v2_{label}",
            keys=DETAIL_KEYS,
            error_class=ERROR_CLASS,
        )
        return failures, _normalized(state)

    def state(self, side: str) -> dict[str, Any]:
        scope = {"ref": self.ref(side), "ident": self.ident(side), "is_path": self.kind == "path", "keys": DETAIL_KEYS}
        found = ours_run(self.spark, STATE, **scope) if side == "ours" else self.deltaspark.run(STATE, **scope)
        return _normalized(found)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_writer_v2_statements_do_what_deltaspark_does(
    scenario: str, spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path
) -> None:
    steps, kind = SCENARIOS[scenario]
    sides = Sides(spark, deltaspark, tmp_path, kind)
    failures, theirs = sides.theirs(steps, scenario)
    for step, failure in zip(steps, failures, strict=True):
        assert {"ours": sides.ours(step), "theirs": failure} == {"ours": step.error, "theirs": step.error}, step.code
    ours = sides.state("ours")
    assert ours["history"] == theirs["history"]
    assert ours["detail"] == theirs["detail"]
    assert ours["new_ids"] == theirs["new_ids"], "the versions that made a new table (a new id)"
    assert ours["versions"] == theirs["versions"]
    if kind == "path":  # delta-spark reads sparkdelta's table as its own
        other = deltaspark.run(STATE, ref=sides.paths["ours"], ident=sides.ident("ours"), is_path=True, keys=DETAIL_KEYS)
        assert _normalized(other)["versions"] == theirs["versions"]


MISSING = (
    (Step('df.writeTo(missing).using("delta").replace()', error="TABLE_OR_VIEW_NOT_FOUND"), "path"),
    (Step("df.writeTo(missing).append()", error="PATH_NOT_FOUND"), "path"),
    (Step("df.writeTo(missing).overwrite(F.lit(True))", error="PATH_NOT_FOUND"), "path"),
    (Step('df.writeTo(missing).using("delta").replace()', error="TABLE_OR_VIEW_NOT_FOUND"), "name"),
    (Step("df.writeTo(missing).append()", error="TABLE_OR_VIEW_NOT_FOUND"), "name"),
)


@pytest.mark.parametrize(("step", "kind"), MISSING, ids=[f"{s.code.split('.', 2)[2][:30]}-{k}" for s, k in MISSING])
def test_writes_to_a_missing_table_fail_as_in_deltaspark(
    step: Step, kind: str, spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    for side in ("ours", "theirs"):
        missing = f"delta.`{tmp_path / side / 'missing'}`" if kind == "path" else f"default.missing_{suffix}"
        code = PRELUDE + step.code
        if side == "ours":
            with pytest.raises(Exception) as caught:
                ours_run(spark, code, missing=missing)
            assert caught.value.getCondition() == step.error  # type: ignore[attr-defined]
        else:
            with pytest.raises(DeltaSparkError) as raised:
                deltaspark.run(code, missing=missing)
            assert _error_class(raised.value.message) == step.error
    assert not Table(str(tmp_path / "ours" / "missing")).exists()


def test_cluster_by_creates_a_clustered_table_as_sql_cluster_by_does(
    spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path
) -> None:
    """delta-spark 4.4's writer refuses ``clusterBy`` (it takes it for a partition transform);
    sparkdelta creates the table SQL's ``CREATE TABLE ... CLUSTER BY ... AS SELECT`` creates."""
    sides = Sides(spark, deltaspark, tmp_path, "path")
    with pytest.raises(DeltaSparkError, match="DELTA_OPERATION_NOT_ALLOWED"):
        deltaspark.run(PRELUDE + 'df.writeTo(t).using("delta").clusterBy("id").create()', t=sides.ident("theirs"))
    deltaspark.run(
        PRELUDE
        + 'df.createOrReplaceTempView("src")\nspark.sql(f"CREATE TABLE {t} USING delta CLUSTER BY (id) AS SELECT * FROM src")',
        t=sides.ident("theirs"),
    )
    ours_run(spark, PRELUDE + 'df.writeTo(t).using("delta").clusterBy("id").create()', t=sides.ident("ours"))
    ours, theirs = sides.state("ours"), sides.state("theirs")
    assert ours == theirs
    assert ours["detail"]["clusteringColumns"] == ["id"] and ours["history"][0][2]["clusterBy"] == ["id"]
    # Replacing without clusterBy clears the clustering, as delta-spark's REPLACE does.
    code = PRELUDE + 'df.writeTo(t).using("delta").replace()'
    ours_run(spark, code, t=sides.ident("ours"))
    deltaspark.run(code, t=sides.ident("theirs"))
    ours, theirs = sides.state("ours"), sides.state("theirs")
    assert ours == theirs and ours["detail"]["clusteringColumns"] == []


def test_a_path_table_is_deltas_without_using(spark: SparkSession, tmp_path: Path) -> None:
    """``delta.`/path``` names a Delta table whatever the provider: no ``using`` is needed.
    (delta-spark takes ``delta`` for a database there, and fails with SCHEMA_NOT_FOUND.)"""
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id INT, s STRING")
    df.writeTo(f"delta.`{path}`").create()
    df.writeTo(f"delta.`{path}`").createOrReplace()
    df.writeTo(f"delta.`{path}`").overwrite(condition=F.col("id") > 0)
    assert [h.operation for h in DeltaTable.forPath(spark, path).history().orderBy("version").collect()] == [
        "CREATE TABLE AS SELECT",
        "CREATE OR REPLACE TABLE AS SELECT",
        "WRITE",
    ]
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()) == [(1, "a"), (2, "b")]


def test_other_providers_and_tables_go_to_spark_untouched(spark: SparkSession, tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:8]
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id INT, s STRING")
    parquet, default = f"default.v2_parquet_{suffix}", f"default.v2_default_{suffix}"
    df.writeTo(parquet).using("parquet").create()
    with pytest.raises(AnalysisException, match="v1 table"):  # Spark's own answer for a table that is not Delta's
        df.writeTo(parquet).append()
    df.writeTo(default).create()  # no provider: the session's default source
    for name, count in ((parquet, 2), (default, 2)):
        provider = spark.sql(f"DESCRIBE EXTENDED {name}").where("col_name = 'Provider'").collect()[0].data_type
        assert provider == "parquet"
        assert spark.table(name).count() == count
        location = spark.sql(f"DESCRIBE EXTENDED {name}").where("col_name = 'Location'").collect()[0].data_type
        assert not Table(location.removeprefix("file:")).exists()


def test_a_transform_is_refused_by_name_before_anything_is_written(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, "2024-01-01")], "id INT, d STRING").selectExpr("id", "to_date(d) AS d")
    for transform, words in (
        (PF.years("d"), r"partitionedBy\(years\(d\)\)"),
        (PF.days("d"), r"partitionedBy\(days\(d\)\)"),
        (PF.bucket(2, "id"), "Bucketing"),
    ):
        with pytest.raises(DeltaAnalysisException, match=words):
            df.writeTo(f"delta.`{path}`").using("delta").partitionedBy(transform).create()
    assert not Table(path).exists() and not Path(path).exists()

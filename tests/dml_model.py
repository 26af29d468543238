"""A pandas-free model of MERGE, DELETE and UPDATE on rows of ``id, p, n, v``, shared by the DML tests.

The model follows the SQL semantics by the book (clauses of a kind in order, the first
whose condition is true acts, NULL is not true) and records the change feed rows each
operation must produce, so tests can check a table, delta-rs's reading of it and its
change data feed against it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

from sparkdelta.tables import DeltaTable

COLUMNS = ["id", "p", "n", "v"]
SCHEMA = StructType(
    [
        StructField("id", LongType()),
        StructField("p", LongType()),
        StructField("n", LongType()),
        StructField("v", StringType()),
    ]
)
ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int64()), ("n", pa.int64()), ("v", pa.string())])
Row = dict[str, Any]


def frame(spark: SparkSession, rows: list[Row]) -> DataFrame:
    return spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows], SCHEMA)


def sorted_rows(rows: list[Row], columns: list[str] = COLUMNS) -> list[tuple]:
    return sorted((tuple(r.get(c) for c in columns) for r in rows), key=repr)


def null_safe(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A SQL-like operator: NULL in, NULL out."""
    return lambda *args: None if any(a is None for a in args) else fn(*args)


gt, lt, add = null_safe(lambda a, b: a > b), null_safe(lambda a, b: a < b), null_safe(lambda a, b: a + b)


@dataclass(frozen=True)
class Clause:
    """One clause for every engine: SQL for ours and delta-rs, Python for the model."""

    kind: str  # matched, notMatched, notMatchedBySource
    action: str  # update, delete, insert
    condition: str | None = None
    check: Callable[[Row | None, Row | None], Any] | None = None  # (target, source) -> True/False/None
    sets: dict[str, str] | None = None  # None: updateAll / insertAll
    values: dict[str, Callable[[Row | None, Row | None], Any]] = field(default_factory=dict)


class MultipleMatches(Exception):
    pass


def model_merge(target: list[Row], source: list[Row], clauses: list[Clause]) -> tuple[list[Row], Counter]:
    """MERGE ... ON t.id = s.id, by the book: the rows after it and the row counts per clause kind."""
    rows, counts, _ = model_merge_with_changes(target, source, clauses)
    return rows, counts


def model_merge_with_changes(
    target: list[Row], source: list[Row], clauses: list[Clause]
) -> tuple[list[Row], Counter, list[tuple]]:
    """``model_merge`` and the change feed rows: (row..., change type)."""
    counts: Counter = Counter()
    changes: list[tuple] = []
    kinds = {k: [c for c in clauses if c.kind == k] for k in ("matched", "notMatched", "notMatchedBySource")}

    def first(kind: str, t: Row | None, s: Row | None) -> Clause | None:
        return next((c for c in kinds[kind] if c.check is None or c.check(t, s) is True), None)

    def new_row(clause: Clause, t: Row | None, s: Row | None) -> Row:
        if clause.sets is None:
            assert s is not None
            return dict(s)
        base = dict(t) if clause.action == "update" and t is not None else dict.fromkeys(COLUMNS)
        return {**base, **{c: fn(t, s) for c, fn in clause.values.items()}}

    result: list[Row] = []
    matched_sources: set[int] = set()
    for t in target:
        matches = [i for i, s in enumerate(source) if t["id"] is not None and t["id"] == s["id"]]
        if len(matches) > 1 and kinds["matched"]:
            raise MultipleMatches
        matched_sources.update(matches)
        kind = "matched" if matches else "notMatchedBySource"
        s = source[matches[0]] if matches else None
        clause = first(kind, t, s)
        if clause is None:
            result.append(dict(t))
            counts["copied"] += 1
        elif clause.action == "delete":
            counts[f"{kind}_deleted"] += 1
            changes.append((*[t[c] for c in COLUMNS], "delete"))
        else:
            result.append(new_row(clause, t, s))
            counts[f"{kind}_updated"] += 1
            changes.append((*[t[c] for c in COLUMNS], "update_preimage"))
            changes.append((*[result[-1][c] for c in COLUMNS], "update_postimage"))
    for i, s in enumerate(source):
        clause = None if i in matched_sources else first("notMatched", None, s)
        if clause is not None:
            result.append(new_row(clause, None, s))
            counts["inserted"] += 1
            changes.append((*[result[-1][c] for c in COLUMNS], "insert"))
    return result, counts, sorted(changes, key=repr)


def run_ours(spark: SparkSession, path: str, source: DataFrame, clauses: list[Clause], evolve: bool = False) -> DataFrame:
    builder = DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
    for c in clauses:
        if c.kind == "matched" and c.action == "update":
            builder = (
                builder.whenMatchedUpdateAll(c.condition) if c.sets is None else builder.whenMatchedUpdate(c.condition, c.sets)
            )
        elif c.kind == "matched":
            builder = builder.whenMatchedDelete(c.condition)
        elif c.kind == "notMatched":
            builder = (
                builder.whenNotMatchedInsertAll(c.condition)
                if c.sets is None
                else builder.whenNotMatchedInsert(c.condition, c.sets)
            )
        elif c.action == "update":
            assert c.sets is not None
            builder = builder.whenNotMatchedBySourceUpdate(c.condition, c.sets)
        else:
            builder = builder.whenNotMatchedBySourceDelete(c.condition)
    return (builder.withSchemaEvolution() if evolve else builder).execute()


# Clause lists: each kind with and without conditions, several of a kind in order.
UPSERT = [
    Clause("matched", "update", None, None, {"n": "s.n", "v": "s.v"}, {"n": lambda t, s: s["n"], "v": lambda t, s: s["v"]}),
    Clause("notMatched", "insert"),
]
CASES: dict[str, list[Clause]] = {
    "update-all-insert-all": [Clause("matched", "update"), Clause("notMatched", "insert")],
    "upsert": UPSERT,
    "conditional-update-only": [
        Clause(
            "matched",
            "update",
            "s.n > 70",
            lambda t, s: gt(s["n"], 70),
            {"n": "t.n + s.n"},
            {"n": lambda t, s: add(t["n"], s["n"])},
        ),
    ],
    "ordered-matched-clauses": [
        Clause("matched", "delete", "s.n < 66", lambda t, s: lt(s["n"], 66)),
        Clause("matched", "update", "t.n > 35", lambda t, s: gt(t["n"], 35), {"v": "'big'"}, {"v": lambda t, s: "big"}),
        Clause("matched", "update", None, None, {"v": "'other'"}, {"v": lambda t, s: "other"}),
    ],
    "unconditional-delete": [Clause("matched", "delete")],
    "conditional-inserts-in-order": [
        Clause(
            "notMatched",
            "insert",
            "s.n > 90",
            lambda t, s: gt(s["n"], 90),
            {"id": "s.id", "v": "'high'"},
            {"id": lambda t, s: s["id"], "v": lambda t, s: "high"},
        ),
        Clause("notMatched", "insert", "s.n > 80", lambda t, s: gt(s["n"], 80)),
    ],
    "not-matched-by-source": [
        Clause("matched", "update", None, None, {"v": "s.v"}, {"v": lambda t, s: s["v"]}),
        Clause("notMatchedBySource", "delete", "t.n < 5", lambda t, s: lt(t["n"], 5)),
        Clause(
            "notMatchedBySource", "update", "t.n > 20", lambda t, s: gt(t["n"], 20), {"v": "'gone'"}, {"v": lambda t, s: "gone"}
        ),
        Clause("notMatchedBySource", "update", None, None, {"n": "0"}, {"n": lambda t, s: 0}),
    ],
    "not-matched-by-source-delete-only": [Clause("notMatchedBySource", "delete")],
    "all-kinds": [
        Clause("matched", "delete", "t.v IS NULL", lambda t, s: t["v"] is None),
        Clause("matched", "update"),
        Clause("notMatched", "insert", "s.n IS NOT NULL", lambda t, s: s["n"] is not None),
        Clause(
            "notMatchedBySource",
            "update",
            "t.p = 2",
            lambda t, s: t["p"] == 2,
            {"n": "t.n + 1000"},
            {"n": lambda t, s: add(t["n"], 1000)},
        ),
    ],
}


def counts_as_metrics(counts: Counter, source_rows: int) -> dict[str, int]:
    """delta-spark's MERGE metrics for the clause outcomes ``model_merge`` counted."""
    updated = counts["matched_updated"] + counts["notMatchedBySource_updated"]
    deleted = counts["matched_deleted"] + counts["notMatchedBySource_deleted"]
    return {
        "numSourceRows": source_rows,
        "numTargetRowsInserted": counts["inserted"],
        "numTargetRowsUpdated": updated,
        "numTargetRowsMatchedUpdated": counts["matched_updated"],
        "numTargetRowsNotMatchedBySourceUpdated": counts["notMatchedBySource_updated"],
        "numTargetRowsDeleted": deleted,
        "numTargetRowsMatchedDeleted": counts["matched_deleted"],
        "numTargetRowsNotMatchedBySourceDeleted": counts["notMatchedBySource_deleted"],
    }

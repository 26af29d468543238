"""Random sequences of appends, deletes, updates and merges, against a model of the rows.

Each sequence runs on a Delta table and on a plain-Python model of its rows. After every
step the table must hold the model's rows, read by our reader and by an independent one
(delta-rs for copy-on-write tables; the spec reader of ``spec_reader`` for tables with
deletion vectors, which delta-rs refuses); at the end every version read by time travel
and the change data feed between pairs of versions must equal the model's history and
its diff. Sequences are seeded, so a failure replays exactly.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from dml_model import CASES, COLUMNS, Row, frame, gt, lt, model_merge_with_changes, null_safe, run_ours, sorted_rows
from pyspark.sql import SparkSession
from spec_reader import spec_rows

from sparkdelta.tables import DeltaTable

Change = tuple[Any, ...]  # (id, p, n, v, change type[, version])


@dataclass(frozen=True)
class Condition:
    """A predicate as SQL (for the table) and as Python over a row (for the model), NULL as None."""

    sql: str
    holds: Callable[[Row], bool | None]


eq = null_safe(lambda a, b: a == b)


def and3(a: bool | None, b: bool | None) -> bool | None:
    return False if a is False or b is False else None if a is None or b is None else True


def or3(a: bool | None, b: bool | None) -> bool | None:
    return True if a is True or b is True else None if a is None or b is None else False


def not3(a: bool | None) -> bool | None:
    return None if a is None else not a


def _conditions(rng: random.Random) -> Condition:
    x, p, k = rng.randrange(0, 60), rng.randrange(0, 3), rng.randrange(0, 5)
    return rng.choice(
        [
            Condition(f"n < {x}", lambda r: lt(r["n"], x)),
            Condition(f"p = {p}", lambda r: eq(r["p"], p)),
            Condition(f"p = {p} AND n > {x}", lambda r: and3(eq(r["p"], p), gt(r["n"], x))),
            Condition("v IS NULL", lambda r: r["v"] is None),
            Condition(f"id % 5 = {k}", lambda r: eq(r["id"] % 5, k)),
            Condition(f"NOT (n > {x} OR p = {p})", lambda r: not3(or3(gt(r["n"], x), eq(r["p"], p)))),
        ]
    )


def _updates(rng: random.Random) -> tuple[dict[str, str], Callable[[Row], Row]]:
    tag = f"u{rng.randrange(100)}"
    return rng.choice(
        [
            ({"n": "n + 1"}, lambda r: {**r, "n": None if r["n"] is None else r["n"] + 1}),
            ({"v": f"'{tag}'"}, lambda r: {**r, "v": tag}),
            ({"n": "NULL", "v": "concat(v, '!')"}, lambda r: {**r, "n": None, "v": None if r["v"] is None else r["v"] + "!"}),
        ]
    )


class Sequence:
    """One table and its model, stepped together."""

    def __init__(self, spark: SparkSession, path: str, rng: random.Random, partitioned: bool, vectors: bool) -> None:
        self.spark, self.path, self.rng, self.vectors = spark, path, rng, vectors
        self.partition_types = {"p": pa.int64()} if partitioned else {}
        self.next_id = 0
        self.rows: list[Row] = self._new_rows(30)
        self.history: list[list[Row]] = [list(self.rows)]
        self.changes: list[list[Change]] = [[(*self._values(r), "insert", 0) for r in self.rows]]
        writer = frame(spark, self.rows).repartition(3).write.format("delta")
        writer = writer.option("delta.enableChangeDataFeed", "true").option("delta.enableDeletionVectors", str(vectors).lower())
        (writer.partitionBy("p") if partitioned else writer).save(path)

    def _new_rows(self, count: int) -> list[Row]:
        rows = []
        for _ in range(count):
            n = None if self.rng.random() < 0.15 else self.rng.randrange(0, 60)
            v = None if self.rng.random() < 0.15 else f"v{self.rng.randrange(1000)}"
            rows.append({"id": self.next_id, "p": self.rng.randrange(0, 3), "n": n, "v": v})
            self.next_id += 1
        return rows

    @staticmethod
    def _values(row: Row) -> tuple[Any, ...]:
        return tuple(row[c] for c in COLUMNS)

    def _commit(self, rows: list[Row], changes: list[Change]) -> None:
        """A new version with ``changes`` (row values and change type); a DML that changes no row commits nothing."""
        self.rows = rows
        if changes:
            version = len(self.history)
            self.history.append(list(rows))
            self.changes.append([(*c, version) for c in changes])

    def append(self) -> str:
        new = self._new_rows(self.rng.randrange(1, 8))
        frame(self.spark, new).write.format("delta").mode("append").save(self.path)
        self._commit(self.rows + new, [(*self._values(r), "insert") for r in new])
        return f"append {len(new)}"

    def delete(self) -> str:
        condition = _conditions(self.rng)
        DeltaTable.forPath(self.spark, self.path).delete(condition.sql)
        gone = [r for r in self.rows if condition.holds(r) is True]
        self._commit([r for r in self.rows if condition.holds(r) is not True], [(*self._values(r), "delete") for r in gone])
        return f"delete where {condition.sql}"

    def update(self) -> str:
        condition = _conditions(self.rng)
        sets, apply = _updates(self.rng)
        DeltaTable.forPath(self.spark, self.path).update(condition.sql, sets)
        rows, changes = [], []
        for r in self.rows:
            if condition.holds(r) is True:
                rows.append(apply(r))
                changes += [(*self._values(r), "update_preimage"), (*self._values(rows[-1]), "update_postimage")]
            else:
                rows.append(r)
        self._commit(rows, changes)
        return f"update {sets} where {condition.sql}"

    def merge(self) -> str:
        case = self.rng.choice(sorted(CASES))
        existing = self.rng.sample(self.rows, min(len(self.rows), self.rng.randrange(1, 10)))
        source = [{**r, "n": self.rng.randrange(0, 120), "v": f"s{r['id']}"} for r in existing] + self._new_rows(
            self.rng.randrange(0, 6)
        )
        run_ours(self.spark, self.path, frame(self.spark, source), CASES[case])
        rows, _, changes = model_merge_with_changes(self.rows, source, CASES[case])
        self._commit(rows, changes)
        return f"merge {case}"

    def check(self, step: str) -> None:
        expected = sorted_rows(self.rows)
        ours = sorted_rows([r.asDict() for r in self.spark.read.format("delta").load(self.path).collect()])
        assert ours == expected, step
        if self.vectors:
            assert sorted_rows(spec_rows(self.path, COLUMNS, self.partition_types)) == expected, step
        else:
            theirs = deltalake.DeltaTable(self.path).to_pyarrow_table().to_pylist()
            assert sorted_rows(theirs) == expected, step

    def check_history(self, pairs: int) -> None:
        for version, rows in enumerate(self.history):
            old = self.spark.read.format("delta").option("versionAsOf", version).load(self.path).collect()
            assert sorted_rows([r.asDict() for r in old]) == sorted_rows(rows), f"version {version}"
        last = len(self.history) - 1
        ranges = {(v, v) for v in range(last + 1)} | {tuple(sorted(self.rng.sample(range(last + 1), 2))) for _ in range(pairs)}
        for start, end in sorted(ranges):
            feed = (
                self.spark.read.format("delta")
                .option("readChangeFeed", "true")
                .option("startingVersion", start)
                .option("endingVersion", end)
                .load(self.path)
            )
            got = sorted((tuple(r[c] for c in [*COLUMNS, "_change_type", "_commit_version"]) for r in feed.collect()), key=repr)
            want = sorted((c for v in range(start, end + 1) for c in self.changes[v]), key=repr)
            assert got == want, f"change feed {start}..{end}"


@pytest.mark.connect_once_per("partitioned", "vectors", reason="the seed draws other steps and rows of the same four")
@pytest.mark.parametrize("seed", [11, 23])
@pytest.mark.parametrize("vectors", [False, True], ids=["copy-on-write", "deletion-vectors"])
@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_random_dml_sequences_match_the_model(
    spark: SparkSession, tmp_path: Path, partitioned: bool, vectors: bool, seed: int
) -> None:
    rng = random.Random(seed * 4 + 2 * partitioned + vectors)
    sequence = Sequence(spark, str(tmp_path / "t"), rng, partitioned, vectors)
    steps = [sequence.append, sequence.delete, sequence.update, sequence.merge]
    done = []
    for _ in range(8):
        done.append(rng.choice(steps)())
        sequence.check(" -> ".join(done))
    sequence.check_history(pairs=4)

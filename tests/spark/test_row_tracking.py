"""Row ids through random sequences of writes, against a model of what each row's id and version must be.

The spec's rules (PROTOCOL.md, "Row Tracking"), checked after every command: a row keeps
its id through every UPDATE, MERGE, DELETE and OPTIMIZE (with and without deletion
vectors); a new row gets an id no row ever had; a row's commit version is the version that
last inserted or updated it. delta-spark's agreement on the same commands is the interop
matrix's (``tests/interop/test_interop_deltaspark.py``).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from sparkdelta.kernel import Table
from sparkdelta.spark.row_tracking import ROW_COMMIT_VERSION, ROW_ID, read_with_row_tracking
from sparkdelta.tables import DeltaTable


def stable_ids(spark: SparkSession, path: str) -> dict[int, tuple[int, int]]:
    """Each row's key -> (row id, row commit version), as sparkdelta reads them."""
    snapshot = Table(path).snapshot()
    rows = read_with_row_tracking(spark, snapshot, snapshot.scan().files).select("k", ROW_ID, ROW_COMMIT_VERSION).collect()
    return {r[0]: (r[1], r[2]) for r in rows}


@pytest.mark.parametrize("seed", [6])  # deletion vectors on from the fifth command, before OPTIMIZE
def test_random_writes_keep_every_rows_id_and_give_new_rows_new_ones(spark: SparkSession, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    path = str(tmp_path / "t")
    table = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {table} (k BIGINT, v INT) USING delta TBLPROPERTIES ('delta.enableRowTracking'='true')")
    model: dict[int, tuple[int, int]] = {}  # key -> (id, version); ids of new rows taken from the table
    used: set[int] = set()
    next_key = 0
    vectors = False
    # Every kind of command, in a random order, each with random arguments.
    kinds = ["merge", "update", "delete", "optimize", "vectors", "update", "delete", "merge"]
    rng.shuffle(kinds)
    for step, kind in enumerate(["append", *kinds]):
        inserted: set[int] = set()
        updated: set[int] = set()
        if kind == "append":
            count = rng.randint(1, 40)
            spark.range(next_key, next_key + count, 1, rng.randint(1, 3)).selectExpr("id AS k", "0 AS v").write.format(
                "delta"
            ).mode("append").save(path)
            inserted = set(range(next_key, next_key + count))
            next_key += count
        elif kind == "update":
            modulus, rest = rng.randint(2, 5), rng.randint(0, 1)
            DeltaTable.forPath(spark, path).update(f"k % {modulus} = {rest}", {"v": f"v + {step}"})
            updated = {k for k in model if k % modulus == rest}
        elif kind == "delete":
            modulus = rng.randint(3, 7)
            DeltaTable.forPath(spark, path).delete(f"k % {modulus} = 0")
            for k in [k for k in model if k % modulus == 0]:
                del model[k]
        elif kind == "merge":
            keys = rng.sample(range(next_key + 10), 8)
            source = spark.createDataFrame([(k, step) for k in keys], "k BIGINT, v INT")
            (
                DeltaTable.forPath(spark, path)
                .alias("t")
                .merge(source.alias("s"), "t.k = s.k")
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
                .execute()
            )
            updated = {k for k in keys if k in model}
            inserted = {k for k in keys if k not in model}
            next_key = max(next_key, max(keys) + 1)
        elif kind == "optimize":
            DeltaTable.forPath(spark, path).optimize().executeCompaction()
        else:
            vectors = not vectors
            spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.enableDeletionVectors'='{str(vectors).lower()}')")
        version = Table(path).snapshot().version
        read = stable_ids(spark, path)
        for k in updated:
            model[k] = (model[k][0], version)
        for k in inserted:
            row_id, row_version = read[k]
            assert row_id not in used, f"step {step} ({kind}): a new row got id {row_id}, which another row had"
            assert row_version == version
            model[k] = (row_id, version)
            used.add(row_id)
        assert read == model, f"step {step} ({kind}) at version {version}"
        assert len({row_id for row_id, _ in read.values()}) == len(read), "ids are unique"

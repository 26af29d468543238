#!/usr/bin/env python
"""Benchmark sparkdelta on a Spark Connect session against a classic one: the same MERGE and scans.

Why: on Spark Connect sparkdelta's kernel runs in the client and every data operation
goes to the server as a DataFrame plan over gRPC, with no py4j shortcut. That must cost
little: the target is Connect within 1.2x of classic (ratio Connect / classic <= 1.2) for
each operation.

What it does (defaults: a 4M-row table in 40 files, a 200,000-row MERGE source):

1. Setup, in a classic session: the table (``spark.range`` with hashed columns ``grp``,
   ``amount``, ``name``, written by sparkdelta, ``repartitionByRange`` so each file holds
   one key range) and the MERGE source (10% updates of keys spread over 10% of the files,
   90% new keys), written as Parquet so both sessions read the same rows.
2. Two contenders, each a process of its own with a 2-core Spark: classic
   (``local[2]``, the JVM in the process) and Connect (a client of a local Spark Connect
   server, ``local[2]``, started beforehand: ``tests/connect_server.py``, whose Python
   cannot import sparkdelta). Each warms up on a small copy, then runs every operation
   ``--runs`` times:
     scan:   ``spark.read.format("delta").load(p).where("grp = 7").agg(sum(amount))``,
             a filtered aggregate (data skipping finds no file to drop: ``grp`` is
             spread over all files)
     point:  ``... .where("id >= X AND id < X + 1000").count()``, which skipping narrows
             to one file
     merge:  ``DeltaTable.forPath(spark, copy).alias("t").merge(source.alias("s"),
             "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()``
             on a fresh copy of the table each run (copy not timed)
   The contenders run one after the other, twice (classic, Connect, classic, Connect),
   so drifting load hits both.
3. Checks: every run of an operation returns the same result on both contenders (scan
   sums, counts, the merge's metrics row, and the row count after the merge).
4. Prints machine info, the best and median time per operation and contender, and the
   ratio Connect / classic of the medians with PASS/FAIL against 1.2.

Run:  python benchmarks/bench_connect.py         (add --help for options)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # connect_server.py

RATIO_TARGET = 1.2
OPERATIONS = ("scan", "point", "merge")


def _session(mode: str, url: str | None) -> Any:
    from pyspark.sql import SparkSession

    import sparkdelta

    if mode == "connect":
        builder = SparkSession.builder.remote(url)
    else:
        builder = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.catalogImplementation", "in-memory")
            .config("spark.driver.memory", "4g")
        )
    spark = sparkdelta.configure(builder).getOrCreate()
    spark.conf.set("spark.sql.shuffle.partitions", "8")
    return spark


def _hashed(ids: Any, seed: int) -> Any:
    from pyspark.sql import functions as F

    return ids.select(
        "id",
        (F.abs(F.xxhash64("id", F.lit(seed))) % 100).cast("int").alias("grp"),
        (F.abs(F.xxhash64("id", F.lit(seed + 1))) % 100_000 / 100).alias("amount"),
        F.concat(F.lit("n"), (F.abs(F.xxhash64("id", F.lit(seed + 2))) % 1000).cast("string")).alias("name"),
    )


def setup(root: Path, rows: int, files: int, source_rows: int) -> None:
    """The table and the source (parquet), for the full size and the warm-up."""
    from pyspark.sql import functions as F

    spark = _session("classic", None)
    for name, n, f, s in (("table", rows, files, source_rows), ("warmup", 100_000, 4, 5_000)):
        _hashed(spark.range(n), 0).repartitionByRange(f, "id").write.format("delta").save(str(root / name))
        per_file = n // f
        touched = max(1, f // 10)
        updates = s // 10
        stride = max(1, per_file * touched // updates)
        updated = spark.range(updates).select(
            ((F.col("id") * stride) % (per_file * touched) + (F.col("id") % touched) * (f // touched) * per_file).alias("id")
        )
        inserted = spark.range(n, n + s - updates)
        source = _hashed(updated.union(inserted).distinct(), 100)
        source.write.parquet(str(root / f"{name}-source"))
    spark.stop()


def contender(mode: str, root: Path, runs: int, url: str | None) -> dict[str, Any]:
    """One contender's timings and results (run in a process of its own)."""
    from pyspark.sql import functions as F

    from sparkdelta.tables import DeltaTable

    spark = _session(mode, url)
    out: dict[str, Any] = {op: [] for op in OPERATIONS}
    results: dict[str, Any] = {}
    for name, repeat in (("warmup", 1), ("table", runs)):
        table = str(root / name)
        source = spark.read.parquet(str(root / f"{name}-source"))
        total = spark.read.format("delta").load(table).count()
        for run in range(repeat):
            start = time.perf_counter()
            scan = spark.read.format("delta").load(table).where("grp = 7").agg(F.sum("amount")).collect()[0][0]
            scan_s = time.perf_counter() - start
            start = time.perf_counter()
            point = spark.read.format("delta").load(table).where(f"id >= {total // 2} AND id < {total // 2 + 1000}").count()
            point_s = time.perf_counter() - start
            copy = root / f"{mode}-{name}-{run}"
            shutil.copytree(table, copy)
            start = time.perf_counter()
            row = (
                DeltaTable.forPath(spark, str(copy))
                .alias("t")
                .merge(source.alias("s"), "t.id = s.id")
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
                .execute()
                .collect()[0]
            )
            metrics = {key: value for key, value in row.asDict().items() if key.startswith("num")}
            merge_s = time.perf_counter() - start
            after = spark.read.format("delta").load(str(copy)).count()
            shutil.rmtree(copy)
            if name == "table":
                out["scan"].append(scan_s)
                out["point"].append(point_s)
                out["merge"].append(merge_s)
                results = {"scan": round(scan, 2), "point": point, "merge": metrics, "rows after merge": after}
    spark.stop()
    return {"times": out, "results": results}


def _child(mode: str, root: Path, runs: int, url: str | None) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", mode, "--root", str(root), "--runs", str(runs)]
    if url:
        command += ["--url", url]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"FAIL: the {mode} contender failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--source-rows", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per operation, per round (two rounds)")
    parser.add_argument("--child", choices=("classic", "connect"), help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(contender(args.child, Path(args.root), args.runs, args.url)))
        return 0

    from connect_server import ConnectServer
    from machine import machine_info

    root = Path(tempfile.mkdtemp(prefix="bench-connect-"))
    try:
        setup(root, args.rows, args.files, args.source_rows)
        server = ConnectServer(root, {"spark.driver.memory": "4g", "spark.ui.enabled": "false"})
        try:
            rounds = [
                {
                    mode: _child(mode, root, args.runs, server.url if mode == "connect" else None)
                    for mode in ("classic", "connect")
                }
                for _ in range(2)
            ]
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    for key, value in machine_info():
        print(f"{key:>10}: {value}")
    print(
        f"     table: {args.rows:,} rows in {args.files} files; MERGE source {args.source_rows:,} rows; "
        f"{args.runs} runs x 2 rounds per contender"
    )
    problems = []
    for mode in ("classic", "connect"):
        if rounds[0][mode]["results"] != rounds[1][mode]["results"]:
            problems.append(f"{mode}: results differ between rounds")
    if rounds[0]["classic"]["results"] != rounds[0]["connect"]["results"]:
        problems.append(f"results differ: classic {rounds[0]['classic']['results']} connect {rounds[0]['connect']['results']}")
    print(f"\n{'operation':<10} {'classic best/median':>22} {'Connect best/median':>22} {'ratio':>7}  target")
    verdicts = []
    for op in OPERATIONS:
        times = {mode: [t for r in rounds for t in r[mode]["times"][op]] for mode in ("classic", "connect")}
        ratio = statistics.median(times["connect"]) / statistics.median(times["classic"])
        passed = ratio <= RATIO_TARGET
        verdicts.append(passed)
        cells = [f"{min(t):.3f} / {statistics.median(t):.3f} s" for t in times.values()]
        print(f"{op:<10} {cells[0]:>22} {cells[1]:>22} {ratio:>7.2f}  <= {RATIO_TARGET} {'PASS' if passed else 'FAIL'}")
    print(f"\nresults (same on both): {json.dumps(rounds[0]['classic']['results'], default=str)}")
    for problem in problems:
        print(f"FAIL: {problem}")
    return 2 if problems else (0 if all(verdicts) else 1)


if __name__ == "__main__":
    sys.exit(main())

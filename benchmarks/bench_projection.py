#!/usr/bin/env python
"""Benchmark a projection spelled as SQL text (``spark/projection.py``) against one Column per column.

Why: every read of a partitioned, column-mapped or deletion-vector table and every
write ends in a projection over all of the table's columns (rename, cast, field
metadata). Built as ``F.col(name).cast(type).alias(name)`` per column, each is about
forty py4j round trips on a classic session, most of them pyspark recording the
caller's Python stack for its error messages; ``select_as`` sends the whole projection
in one ``selectExpr``. Target: its time at most 1.0 of the Columns' (named baseline:
the Column per column projection that sparkdelta built before commit 1f13fbb).

What it does, in one run: one classic ``local[1]`` session with the test suite's JVM
options; a DataFrame of ``--columns`` columns (each case: 10, 50 and 200 by default);
for each case, ``--repeats`` rounds, each building the projection ``--builds`` times one
way, then the other (which goes first alternates). It measures only the building (Spark
analyses each projection as it is built; no job runs): wall time, the JVM's CPU
(``/proc/<pid>/stat``), this process's CPU, and the py4j calls. Both projections are
checked to give the same schema. It prints medians per build and the ratio ours/baseline.

Run:  python benchmarks/bench_projection.py             (about 2 minutes)
      python benchmarks/bench_projection.py --columns 20 --repeats 9
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import py4j.clientserver  # type: ignore[import-untyped]  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.types import DataType, DecimalType, LongType, StringType  # noqa: E402

from class_archives import BASE_OPTIONS  # type: ignore[import-not-found]  # noqa: E402
from machine import git_revision, load_average, machine_info  # noqa: E402

from sparkdelta.spark.projection import select_as  # noqa: E402

_calls = [0]
_send = py4j.clientserver.ClientServerConnection.send_command


def _counted(self: py4j.clientserver.ClientServerConnection, command: str, *args: object, **kwargs: object) -> object:
    _calls[0] += 1
    return _send(self, command, *args, **kwargs)


def _types(columns: int) -> list[DataType]:
    kinds: list[DataType] = [LongType(), StringType(), DecimalType(12, 2)]
    return [kinds[i % len(kinds)] for i in range(columns)]


def _by_columns(df: DataFrame, types: list[DataType]) -> DataFrame:
    return df.select(*[F.col(f"`c {i}`").cast(t).alias(f"c {i}") for i, t in enumerate(types)])


def _by_sql(df: DataFrame, types: list[DataType]) -> DataFrame:
    return select_as(df, [(f"c {i}", f"c {i}", t) for i, t in enumerate(types)])


def _measure(build: Callable[[], DataFrame], builds: int, jvm_stat: Path) -> tuple[float, float, float, float]:
    """Per build: wall seconds, JVM CPU seconds, this process's CPU seconds, py4j calls."""

    def cpu() -> tuple[float, float]:
        parts = jvm_stat.read_text().split()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return (int(parts[13]) + int(parts[14])) / os.sysconf("SC_CLK_TCK"), usage.ru_utime + usage.ru_stime

    jvm0, own0 = cpu()
    calls0, start = _calls[0], time.perf_counter()
    for _ in range(builds):
        build()
    wall = time.perf_counter() - start
    jvm1, own1 = cpu()
    return wall / builds, (jvm1 - jvm0) / builds, (own1 - own0) / builds, (_calls[0] - calls0) / builds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--columns", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--builds", type=int, default=20)
    args = parser.parse_args()

    os.environ.setdefault("SPARK_SUBMIT_OPTS", BASE_OPTIONS)
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    py4j.clientserver.ClientServerConnection.send_command = _counted
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    jvm_stat = Path(f"/proc/{int(jvm.java.lang.ProcessHandle.current().pid())}/stat")
    for key, value in machine_info():
        print(f"{key}: {value}")
    print(f"revision: {git_revision()}; load before: {load_average()}")
    print(f"{args.repeats} rounds of {args.builds} builds per side; medians per build")
    print("| columns | side | wall ms | JVM CPU ms | Python CPU ms | py4j calls | wall ratio ours/baseline |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    failed = False
    for columns in args.columns:
        types = _types(columns)
        df = spark.range(3).selectExpr(*[f"CAST(id AS STRING) AS `c {i}`" for i in range(columns)])
        ours, baseline = (lambda: _by_sql(df, types)), (lambda: _by_columns(df, types))
        if ours().schema != baseline().schema:
            print(f"FAIL: {columns} columns: the projections' schemas differ")
            return 2
        for build in (ours, baseline):  # warm-up: the JVM's code for both paths compiled
            _measure(build, args.builds, jvm_stat)
        figures: dict[str, list[tuple[float, float, float, float]]] = {"ours": [], "baseline": []}
        for round_ in range(args.repeats):
            order = [("ours", ours), ("baseline", baseline)]
            for side, build in order if round_ % 2 == 0 else order[::-1]:
                figures[side].append(_measure(build, args.builds, jvm_stat))
        medians = {side: [statistics.median(f[i] for f in rows) for i in range(4)] for side, rows in figures.items()}
        ratio = medians["ours"][0] / medians["baseline"][0]
        failed |= ratio > 1.0
        for side in ("ours", "baseline"):
            wall, jvm_cpu, own_cpu, calls = medians[side]
            shown = f"{ratio:.3f} {'PASS' if ratio <= 1.0 else 'FAIL'}" if side == "ours" else ""
            figures_ms = f"{wall * 1e3:.1f} | {jvm_cpu * 1e3:.1f} | {own_cpu * 1e3:.1f}"
            print(f"| {columns} | {side} | {figures_ms} | {calls:.0f} | {shown} |")
    spark.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""The delta-spark side of the oracle: runs in delta-spark's own venv (pyspark 4.2.0 and
delta-spark's jars), never in sparkdelta's. ``tests/deltaspark.py`` starts it and sends
it Python snippets over a local socket; each runs with ``spark`` (a delta-spark session)
and ``DeltaTable`` in scope and answers with its ``result`` variable, made picklable by
:func:`plain` so that no pyspark object crosses between the two pyspark versions.

Kept to the standard library and pyspark so that it runs in either venv: the parent
imports :func:`plain` from here to shape its own rows the same way.
"""

from __future__ import annotations

import datetime
import decimal
import sys
import traceback
from typing import Any

# The oracle runs its queries interpreted, neither whole stages nor single expressions compiled
# (the latter a setting Spark's own tests use): its tables hold a few rows, so compiling each new
# query's code costs more than running it, and what a query answers does not depend on how Spark
# evaluates it. A fifth to a third less of its CPU over the interop matrix (BENCHMARKS.md).
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


def plain(value: Any) -> Any:
    """A Spark value as plain Python: rows and structs become tuples, variants their JSON,
    so that results from two pyspark versions compare with ``==``."""
    if value is None or isinstance(value, (bool, int, float, str, bytes, decimal.Decimal, datetime.date)):
        return value
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, tuple):  # pyspark's Row is a tuple
        return tuple(plain(item) for item in value)
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {plain(key): plain(item) for key, item in value.items()}
    to_json = getattr(value, "toJson", None)  # pyspark's VariantVal
    if callable(to_json):
        return ("variant", to_json())
    return repr(value)


def rows(df: Any) -> list[tuple[Any, ...]]:
    """A DataFrame's rows as sorted plain tuples: Delta promises no row order."""
    return sorted((plain(row) for row in df.collect()), key=repr)


def main() -> None:
    from multiprocessing.connection import Client

    from delta.tables import DeltaTable
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F  # noqa: N812

    address, authkey_hex, jars, warehouse, time_zone = sys.argv[1:6]
    spark = (
        SparkSession.builder.master("local[2]")
        .config(map=INTERPRETED)
        .appName("delta-spark-oracle")
        .config("spark.jars", jars)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.warehouse.dir", f"{warehouse}/spark-warehouse")
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={warehouse}/derby")
        .config("spark.sql.shuffle.partitions", "4")
        # VACUUM lists a table in this many tasks: Spark's default (10,000) takes minutes on 2 cores.
        .config("spark.sql.sources.parallelPartitionDiscovery.parallelism", "4")
        # Snapshot state in one task, not delta-spark's 50: the oracle's tables are small, and each
        # task of a state reconstruction generates its own code for the log's actions (whole
        # stages are not compiled here). Over four interop cases, 143 s of CPU against 153 s with 2.
        .config("spark.databricks.delta.snapshotPartitions", "1")
        .config("spark.sql.session.timeZone", time_zone)
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    host, port = address.rsplit(":", 1)
    connection = Client((host, int(port)), authkey=bytes.fromhex(authkey_hex))
    connection.send(("ready", spark.version))
    while True:
        request = connection.recv()
        if request is None:
            break
        code, variables = request
        scope: dict[str, Any] = {"spark": spark, "DeltaTable": DeltaTable, "F": F, "rows": rows, "plain": plain, **variables}
        try:
            exec(code, scope)  # noqa: S102 - the tests' own snippets
            connection.send(("ok", scope.get("result")))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the test
            connection.send(("error", (type(exc).__name__, str(exc), traceback.format_exc())))
    spark.stop()


if __name__ == "__main__":
    main()

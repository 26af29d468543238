"""Delta-to-Delta streams stopped inside a micro-batch, for ``test_stream_restarts.py``.

Imports only the standard library and pyspark, so that it runs in sparkdelta's venv and in
delta-spark's. Each query's ids pass a gate: the first time a query meets its ``gate`` id,
it leaves a marker file and, by ``on_gate``, either waits there for good (``"wait"``: the
test kills the whole driver with SIGKILL) or fails its batch (``"fail"``); either way
Spark's checkpoint holds the batch as planned and not finished. A restarted query passes
the gates it left markers for; one without a gate runs to its end (``availableNow``, or
all that is available for a processing-time trigger).

As a script (``python restart_driver.py SPEC.json``) it builds sparkdelta's session, starts
the spec's batch writes (each stopped at its gate) and queries, and waits to be killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812


def _marker(markers: str, name: str, gate: int | None) -> str:
    return os.path.join(markers, f"{name}.{gate}")


def gated(name: str, gate: int | None, markers: str, on_gate: str) -> Any:
    """The identity on ids, but for the first time ``name`` meets ``gate``."""
    marker = _marker(markers, name, gate)

    def through(value: int) -> int:
        if value == gate and not os.path.exists(marker):
            with open(marker, "w"):
                pass
            if on_gate == "fail":
                raise RuntimeError("stopped at the gate")
            time.sleep(3600)  # until the test kills the driver
        return value

    return F.udf(through, "long")


def start(spark: SparkSession, query: dict[str, Any], markers: str, on_gate: str) -> Any:
    reader = spark.readStream.format("delta")
    if query["max_files"] is not None:
        reader = reader.option("maxFilesPerTrigger", query["max_files"])
    if query["cdf"]:
        reader = reader.option("readChangeFeed", "true")
    rows = reader.load(query["source"])
    rows = rows.withColumn("id", gated(query["name"], query["gate"], markers, on_gate)("id"))
    if query["cdf"]:
        rows = rows.drop("_commit_timestamp")  # a time: the implementations' sinks are compared
    writer = rows.writeStream.format("delta").option("checkpointLocation", query["checkpoint"])
    if query["trigger"] == "availableNow":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="0 seconds")
    return writer.start(query["sink"])


def write_stopped(spark: SparkSession, write: dict[str, Any], markers: str) -> None:
    """An append of ten ids from its gate on, in two tasks: the first stops at the gate, the
    second finishes, so that its file is staged when the driver is killed."""
    ids = spark.range(write["gate"], write["gate"] + 10, 1, 2).withColumn(
        "id", gated(write["name"], write["gate"], markers, "wait")("id")
    )
    ids.selectExpr("id", "id * 10 as v").write.format("delta").mode("append").save(write["path"])


def run_queries(spark: SparkSession, queries: list[dict[str, Any]], markers: str, on_gate: str) -> None:
    """Start the queries, one after another; return once each has stopped at its gate
    (``"fail"``; with ``"wait"`` a query ends only by failing) or run to its end."""
    started = []
    for query in queries:
        running = start(spark, query, markers, on_gate)
        # One query's sources at a time: a Python source starts a process, which must
        # answer Spark within 10 seconds; several starting at once on 2 cores may not.
        while running.isActive and running.status["message"].startswith("Initializing"):
            time.sleep(0.05)
        started.append((query, running))
    if on_gate == "wait":
        spark.streams.awaitAnyTermination()
        name, failed = next((q["name"], r) for q, r in started if not r.isActive)
        raise SystemExit(f"{name} ended before its gate: {failed.exception()}")
    for query, running in started:
        if query["gate"] is None and query["trigger"] != "availableNow":
            running.processAllAvailable()
            running.stop()
        else:
            with contextlib.suppress(Exception):  # a failed query raises here; its error is read below
                running.awaitTermination(300)
        error = running.exception()
        if query["gate"] is None and error is not None:
            raise RuntimeError(f"{query['name']}: {error}")
        if query["gate"] is not None and (error is None or not os.path.exists(_marker(markers, query["name"], query["gate"]))):
            raise RuntimeError(f"{query['name']} did not stop at its gate: {error}")


def main() -> None:
    with open(sys.argv[1]) as file:
        spec = json.load(file)
    import sparkdelta

    builder = (
        # A slot for each stopped task of a query or write, and two to work in.
        SparkSession.builder.master(f"local[{2 + len(spec['queries']) + len(spec['writes'])}]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    for key, value in spec["configs"].items():
        builder = builder.config(key, value)
    spark = sparkdelta.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for write in spec["writes"]:
        threading.Thread(target=write_stopped, args=(spark, write, spec["markers"]), daemon=True).start()
    run_queries(spark, spec["queries"], spec["markers"], "wait")


if __name__ == "__main__":
    main()

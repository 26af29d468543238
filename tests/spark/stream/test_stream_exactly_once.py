"""A Delta-to-Delta stream is exactly once across ``kill -9`` of its driver.

The query runs in its own driver process, slowed so that a batch takes a while; the test
kills it (SIGKILL: no shutdown hooks, no cleanup) until one kill lands inside a batch
(Spark's offset log holds a batch its commit log does not), then reruns it to the end.
The sink must then hold every source row exactly once, its ``txn`` versions must be the
query's batches, and later appends and idle reruns must add exactly what is new.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

SRC = Path(__file__).resolve().parents[3] / "src"

# Delta streams run sparkdelta in the Spark server's Python (``spark/stream/server.py``); the
# tests' Connect server has none, so there they are refused by name (test_stream_connect.py).
pytestmark = pytest.mark.classic_only

DRIVER = """
import sys
import time
import sparkdelta
from pyspark.sql import SparkSession
from pyspark.sql import functions as F


source, sink, checkpoint, mode = sys.argv[1:5]
builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
spark = sparkdelta.configure(builder).getOrCreate()
stream = (
    spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(source)
    # 40 ms a row: a batch of one source file takes a while, so a kill lands inside one.
    .select(F.udf(lambda i: time.sleep(0.04) or i, "long")("id").alias("id"), "v")
)
writer = stream.writeStream.format("delta").option("checkpointLocation", checkpoint)
writer = writer.trigger(availableNow=True) if mode == "once" else writer.trigger(processingTime="0 seconds")
query = writer.start(sink)
query.awaitTermination()
"""


def _driver(tmp_path: Path, source: str, sink: str, checkpoint: str, mode: str) -> subprocess.Popen[bytes]:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, str(script), source, sink, checkpoint, mode],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its JVM goes down with it
    )


def _batches(checkpoint: Path, log: str) -> set[int]:
    folder = checkpoint / log
    return {int(p.name) for p in folder.iterdir() if p.name.isdigit()} if folder.exists() else set()


def _sink_ids(sink: str) -> list[int]:
    return sorted(pa.table(deltalake.DeltaTable(sink).to_pyarrow_table()).column("id").to_pylist())


def _append(spark: SparkSession, path: str, start: int, commits: int) -> None:
    for first in range(start, start + 10 * commits, 10):
        spark.range(first, first + 10).selectExpr("id", "id * 2 as v").coalesce(1).write.format("delta").mode("append").save(path)


def test_kill_9_mid_batch_then_restart_is_exactly_once(spark: SparkSession, tmp_path: Path) -> None:
    source, sink, checkpoint = str(tmp_path / "source"), str(tmp_path / "sink"), tmp_path / "checkpoint"
    _append(spark, source, 0, 12)
    landed_mid_batch = 0
    for attempt in range(6):
        driver = _driver(tmp_path, source, sink, str(checkpoint), "continuous")
        deadline = time.monotonic() + 120
        # Let it run into a batch: wait for a new offset entry, then a little into the batch.
        started = len(_batches(checkpoint, "offsets"))
        while len(_batches(checkpoint, "offsets")) <= started and time.monotonic() < deadline and driver.poll() is None:
            time.sleep(0.05)
        time.sleep(0.1 + 0.15 * attempt)
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
        landed_mid_batch += bool(_batches(checkpoint, "offsets") - _batches(checkpoint, "commits"))
        if landed_mid_batch >= 2:
            break
    assert landed_mid_batch, "no kill landed inside a batch"

    finish = _driver(tmp_path, source, sink, str(checkpoint), "once")
    assert finish.wait(timeout=300) == 0
    assert _sink_ids(sink) == list(range(120))

    table = deltalake.DeltaTable(sink)
    history = table.history()
    streaming = [h for h in history if h["operation"] == "STREAMING UPDATE"]
    epochs = sorted(int(h["operationParameters"]["epochId"]) for h in streaming)
    assert len(epochs) == len(set(epochs)), "a batch committed twice"
    assert len({h["operationParameters"]["queryId"] for h in streaming}) == 1

    _append(spark, source, 120, 2)
    assert _driver(tmp_path, source, sink, str(checkpoint), "once").wait(timeout=300) == 0
    assert _sink_ids(sink) == list(range(140))
    version = deltalake.DeltaTable(sink).version()
    assert _driver(tmp_path, source, sink, str(checkpoint), "once").wait(timeout=300) == 0
    assert deltalake.DeltaTable(sink).version() == version, "an idle rerun committed"

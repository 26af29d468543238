"""Delta streams on Spark Connect: they run sparkdelta in the server's Python.

On a server without sparkdelta (the tests' own, ``tests/connect_server.py``) every Delta
stream is refused by name before anything starts or is created. On a server with it (a
local one from this interpreter, in a process of its own), the source and the sink run
there: rows read from one table and committed to another, once per batch, with
delta-spark's ``txn`` (the started query's id and the batch id).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from sparkdelta.exceptions import DeltaUnsupportedOperationException

REFUSED = r"on Spark Connect runs sparkdelta in the Spark server's Python processes .* cannot import sparkdelta"


@pytest.mark.connect_only  # a classic session runs streams in this interpreter
def test_streams_are_refused_by_name_on_a_server_without_sparkdelta(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    with pytest.raises(DeltaUnsupportedOperationException, match=REFUSED):
        spark.readStream.format("delta").load(path)
    rows = spark.readStream.format("rate").load().select(F.col("value").alias("id"))
    with pytest.raises(DeltaUnsupportedOperationException, match=REFUSED):
        rows.writeStream.format("delta").option("checkpointLocation", str(tmp_path / "c1")).start(str(tmp_path / "sink"))
    with pytest.raises(DeltaUnsupportedOperationException, match=REFUSED):
        rows.writeStream.format("delta").option("checkpointLocation", str(tmp_path / "c2")).toTable("connect_refused_sink")
    assert spark.streams.active == []
    assert not (tmp_path / "sink").exists()
    assert not spark.catalog.tableExists("connect_refused_sink")


SCRIPT = """
import json, sys
import sparkdelta
from pyspark.sql import SparkSession

root = sys.argv[1]
spark = sparkdelta.configure(SparkSession.builder.remote("local[1]")).getOrCreate()
spark.range(0, 10, 1, 2).write.format("delta").save(root + "/source")
stream = spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(root + "/source")
query = (
    stream.writeStream.format("delta").option("checkpointLocation", root + "/checkpoint")
    .trigger(availableNow=True).start(root + "/sink")
)
query.awaitTermination()
rows = sorted(r[0] for r in spark.read.format("delta").load(root + "/sink").collect())
print(json.dumps({"rows": rows, "query": query.id}))
spark.stop()
"""


def test_streams_run_on_a_server_with_sparkdelta(tmp_path: Path) -> None:
    """A Connect client and server of its own, in a child process: runs in the classic suite
    (``--connect`` keeps the tests of its one session's server only)."""
    src = str(Path(__file__).resolve().parents[3] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]), "PYSPARK_PYTHON": sys.executable}
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["rows"] == list(range(10))
    commits = sorted((tmp_path / "sink" / "_delta_log").glob("*.json"))
    txns = [json.loads(line)["txn"] for c in commits for line in c.read_text().splitlines() if '"txn"' in line]
    assert [t["version"] for t in txns] == [0, 1], "one commit per batch (a file each), the batch id as txn version"
    assert {t["appId"] for t in txns} == {result["query"]}

"""``pip install 'sparkdelta[connect]'`` with ``pyspark-client``: the pure-Python Spark Connect
client, no JVM and no py4j in the client, against a stock Connect server.

The venv is made fresh for the run (pip's cache keeps it quick), from this checkout, so
it tests the package as a user installs it: only the ``connect`` extra's dependencies.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import deltalake
import pytest
from connect_server import ConnectServer, classic_environment

REPO = Path(__file__).resolve().parent.parent


def _client_environment() -> dict[str, str]:
    """A user's shell: none of this process's Spark settings (its ``SPARK_HOME`` names the full
    pyspark, which a pyspark-client would take for its own)."""
    return classic_environment(exclude={"SPARK_HOME", "PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"})


CLIENT = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession
    import sparkdelta
    from sparkdelta.tables import DeltaTable

    spark = sparkdelta.configure(SparkSession.builder.remote(sys.argv[1])).getOrCreate()
    path = sys.argv[2]
    spark.range(10).selectExpr("id", "id % 3 AS grp").write.format("delta").partitionBy("grp").save(path)
    spark.range(10, 15).selectExpr("id", "id % 3 AS grp").write.format("delta").mode("append").save(path)
    filtered = spark.read.format("delta").load(path).where("id > 3 AND grp = 1").count()
    first = spark.read.format("delta").option("versionAsOf", 0).load(path).count()
    DeltaTable.forPath(spark, path).delete("id < 2")
    DeltaTable.forPath(spark, path).update("id = 5", {"grp": "grp + 10"})
    history = [r.operation for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect()]
    print(json.dumps({"filtered": filtered, "first": first, "history": history}))
    """
)


@pytest.fixture(scope="module")
def client_python(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    venv = tmp_path_factory.mktemp("pyspark-client") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"{REPO}[connect]"],
        check=True,
        capture_output=True,
        text=True,
        env=_client_environment(),
    )
    yield python


def test_the_connect_extra_installs_no_jvm_client(client_python: Path) -> None:
    listed = subprocess.run(
        [str(client_python), "-m", "pip", "list", "--format=json"], check=True, capture_output=True, text=True
    )
    names = {package["name"].lower() for package in json.loads(listed.stdout)}
    assert {"pyspark-client", "sparkdelta"} <= names
    assert not names & {"pyspark", "py4j"}


def test_delta_tables_through_pyspark_client(client_python: Path, tmp_path: Path) -> None:
    server = ConnectServer(tmp_path)
    try:
        table = tmp_path / "t"
        script = tmp_path / "client.py"  # a script, as users run one (pyspark-client 4.2 looks for a Spark home beside it)
        script.write_text(CLIENT)
        done = subprocess.run(
            [str(client_python), str(script), server.url, str(table)],
            capture_output=True,
            text=True,
            timeout=600,
            env=_client_environment(),
        )
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome == {"filtered": 4, "first": 10, "history": ["WRITE", "WRITE", "DELETE", "UPDATE"]}
    # delta-rs reads what the client wrote: ids 2..14, id 5 moved to group 12.
    rows = deltalake.DeltaTable(str(table)).to_pyarrow_table().sort_by("id").to_pylist()
    assert rows == [{"id": i, "grp": i % 3 + (10 if i == 5 else 0)} for i in range(2, 15)]

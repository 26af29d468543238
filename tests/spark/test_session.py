"""Sessions behave: sparkdelta never changes a user's setting silently, any session serves Delta,
delta-spark's JVM settings are dropped with a warning, and the metastore does not depend on
the working directory (and a second process on it gets an error naming the fix).

Fresh sessions need fresh JVMs, so most cases run a small script in a child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from pyspark.sql import SparkSession

import sparkdelta

SRC = Path(__file__).resolve().parents[2] / "src"


def run_script(script: str, cwd: Path, home: Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        "SPARKDELTA_HOME": str(home),
        "PYSPARK_PYTHON": sys.executable,
    }
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_configure_changes_no_setting_of_a_running_session(spark: SparkSession, connect: bool, tmp_path: Path) -> None:
    settings = {"spark.sql.session.timeZone": "America/New_York", "spark.sql.parquet.outputTimestampType": "INT96"}
    before = {key: spark.conf.get(key) for key in settings}
    try:
        for key, value in settings.items():
            spark.conf.set(key, value)
        if not connect:  # a Connect client's builder needs the server's address: the fixture's to give
            again = sparkdelta.configure(SparkSession.builder).getOrCreate()
            assert again is spark
        assert {key: spark.conf.get(key) for key in settings} == settings
        # ...and Delta works there as it is: timestamps read back as written, in the user's zone.
        path = str(tmp_path / "t")
        spark.sql("SELECT timestamp'2024-03-10 01:30:00' AS ts").write.format("delta").save(path)
        assert str(spark.read.format("delta").load(path).selectExpr("CAST(ts AS STRING)").first()[0]) == "2024-03-10 01:30:00"
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)


def test_a_session_made_before_configure_serves_delta_and_keeps_its_time_zone(tmp_path: Path) -> None:
    done = run_script(
        """
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.master("local[1]").config("spark.sql.session.timeZone", "Asia/Tokyo").getOrCreate()
        import sparkdelta
        assert sparkdelta.configure(SparkSession.builder).getOrCreate() is spark
        spark.range(3).write.format("delta").save("t")
        assert sorted(r.id for r in spark.read.format("delta").load("t").collect()) == [0, 1, 2]
        print("zone", spark.conf.get("spark.sql.session.timeZone"))
        """,
        tmp_path,
        tmp_path / "home",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "zone Asia/Tokyo" in done.stdout


def test_delta_spark_settings_are_dropped_with_a_warning(tmp_path: Path) -> None:
    done = run_script(
        """
        import warnings
        warnings.simplefilter("always")
        from pyspark.sql import SparkSession
        import sparkdelta
        builder = (
            SparkSession.builder.master("local[1]")
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        )
        with warnings.catch_warnings(record=True) as seen:
            spark = sparkdelta.configure(builder).getOrCreate()
        print("warned", sorted(str(w.message).split("=")[0].split()[-1] for w in seen))
        spark.sql("CREATE TABLE t (id INT) USING delta")
        spark.sql("INSERT INTO t VALUES (1)")
        print("tables", [t.name for t in spark.catalog.listTables()], spark.table("t").count())
        spark.stop()

        # A session built by other code (delta-spark's test base builds SparkConf + SparkSession(sc)).
        from pyspark import SparkConf, SparkContext
        conf = SparkConf().set("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        with warnings.catch_warnings(record=True) as seen:
            other = SparkSession(SparkContext("local[1]", "other", conf=conf))
        print("warned again", any("DeltaCatalog" in str(w.message) for w in seen))
        print("catalog works", other.sql("SHOW TABLES").count() >= 0)
        """,
        tmp_path,
        tmp_path / "home",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "warned ['spark.sql.catalog.spark_catalog', 'spark.sql.extensions']" in done.stdout
    assert "tables ['t'] 1" in done.stdout
    assert "warned again True" in done.stdout and "catalog works True" in done.stdout


HOLD_METASTORE = """
    import sys
    from pyspark.sql import SparkSession
    import sparkdelta
    spark = sparkdelta.configure(SparkSession.builder.master("local[1]")).getOrCreate()
    spark.sql("CREATE TABLE IF NOT EXISTS held (id INT) USING delta")
    print("holding", flush=True)
    sys.stdin.readline()
"""


def test_the_metastore_lives_in_sparkdelta_home_and_a_second_process_is_told_the_fix(tmp_path: Path) -> None:
    home, first_dir, second_dir = tmp_path / "home", tmp_path / "a", tmp_path / "b"
    first_dir.mkdir()
    second_dir.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        "SPARKDELTA_HOME": str(home),
        "PYSPARK_PYTHON": sys.executable,
    }
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLD_METASTORE)],
        cwd=first_dir,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert holder.stdout is not None
        deadline = time.monotonic() + 240
        while "holding" not in holder.stdout.readline():
            assert time.monotonic() < deadline and holder.poll() is None, "the first session did not start"
        # Not in the working directory: under SPARKDELTA_HOME, with the warehouse.
        assert (home / "metastore_db").is_dir() and (home / "spark-warehouse" / "held").is_dir()
        assert not (first_dir / "metastore_db").exists() and not (first_dir / "spark-warehouse").exists()
        done = run_script(
            """
            from pyspark.sql import SparkSession
            import sparkdelta
            spark = sparkdelta.configure(SparkSession.builder.master("local[1]")).getOrCreate()
            try:
                spark.sql("SELECT * FROM held").collect()
            except Exception as error:
                print("refused", type(error).__name__, error)
            """,
            second_dir,
            home,
        )
    finally:
        holder.communicate("\n", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "refused DeltaAnalysisException" in done.stdout
    assert f"the Hive metastore at {home / 'metastore_db'} is in use by another Spark process" in done.stdout
    assert "SPARKDELTA_HOME" in done.stdout
    assert done.stderr.count("\n") < 200, "the refusal came after Hive's flood of log lines"

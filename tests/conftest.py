"""One SparkSession for the whole test run (local[2]), created only if a test asks for it.

Its warehouse and Hive metastore live in a temporary directory, so tests never touch
(or depend on) a ``spark-warehouse`` or ``metastore_db`` in the working directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deltaspark import DeltaSpark

REPO = Path(__file__).resolve().parent.parent

# delta-spark's own tests, vendored verbatim: tests/compat/test_delta_spark_suite.py runs them
# in a process of their own (they build their own SparkContext).
collect_ignore_glob = ["compat/delta_spark/*"]


def catalog_configs(directory: Path) -> dict[str, str]:
    """Settings that put a session's warehouse and embedded metastore under ``directory``."""
    return {
        "spark.sql.warehouse.dir": str(directory / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={directory / 'metastore_db'};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={directory}",
    }


def hadoop_aws_classpath() -> str | None:
    """Hadoop's S3A connector for the tests' Spark (``scripts/fetch_hadoop_aws.sh``, cached
    outside the repo), or ``None`` with a warning when it cannot be fetched: the ``s3a://``
    tests then fail saying so, and every other test runs."""
    try:
        done = subprocess.run(
            [str(REPO / "scripts" / "fetch_hadoop_aws.sh")],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHON": sys.executable},
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        warnings.warn(f"no hadoop-aws for Spark on s3a://: {exc} {getattr(exc, 'stderr', '')}", stacklevel=1)
        return None
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pyspark.sql.SparkSession]:  # noqa: F821
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import sparkdelta

    builder = SparkSession.builder.appName("sparkdelta-tests").master("local[2]")
    for key, value in catalog_configs(tmp_path_factory.mktemp("catalog")).items():
        builder = builder.config(key, value)
    classpath = hadoop_aws_classpath()
    if classpath:
        builder = builder.config("spark.driver.extraClassPath", classpath)
    session = sparkdelta.configure(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    session.conf.set("spark.sql.shuffle.partitions", "4")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def deltaspark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeltaSpark]:
    """delta-spark, the reference implementation, in its own venv and process
    (``tests/deltaspark.py``): the oracle of the two-way conformance tests."""
    oracle = DeltaSpark(tmp_path_factory.mktemp("delta-spark"))
    yield oracle
    oracle.close()


# Object-store endpoints on loopback (moto's S3 server, Azurite), for tests/kernel/test_object_stores.py.
from object_stores import azurite, moto_s3  # noqa: E402,F401


@pytest.fixture(scope="session")
def baseline(spark: pyspark.sql.SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Any:  # noqa: F821
    """The lakehouse tests' shared batch runs (``tests/lakehouse/lakehouse_baseline.py``), built
    once per session. Here, not in a ``tests/lakehouse/conftest.py``: the tests import this
    module as ``conftest``, and a second one would shadow it."""
    from lakehouse_baseline import build_baseline  # on the path once tests/lakehouse is collected

    return build_baseline(spark, tmp_path_factory.mktemp("lakehouse") / "warehouse")

"""One SparkSession for the whole test run (local[2]), created only if a test asks for it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator["pyspark.sql.SparkSession"]:  # noqa: F821
    os.environ["PYSPARK_PYTHON"] = sys.executable
    import sparkdelta

    session = sparkdelta.spark_session(app_name="sparkdelta-tests", master="local[2]")
    session.sparkContext.setLogLevel("ERROR")
    session.conf.set("spark.sql.shuffle.partitions", "4")
    yield session
    session.stop()

"""One SparkSession for the whole test run (local[2]), created only if a test asks for it.

Its warehouse and Hive metastore live in a temporary directory, so tests never touch
(or depend on) a ``spark-warehouse`` or ``metastore_db`` in the working directory.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def catalog_configs(directory: Path) -> dict[str, str]:
    """Settings that put a session's warehouse and embedded metastore under ``directory``."""
    return {
        "spark.sql.warehouse.dir": str(directory / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={directory / 'metastore_db'};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={directory}",
    }


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pyspark.sql.SparkSession]:  # noqa: F821
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import sparkdelta

    builder = SparkSession.builder.appName("sparkdelta-tests").master("local[2]")
    for key, value in catalog_configs(tmp_path_factory.mktemp("catalog")).items():
        builder = builder.config(key, value)
    session = sparkdelta.configure(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    session.conf.set("spark.sql.shuffle.partitions", "4")
    yield session
    session.stop()


# Object-store endpoints on loopback (moto's S3 server, Azurite), for tests/test_object_stores.py.
from object_stores import azurite, moto_s3  # noqa: E402,F401

"""The lakehouse tests' shared batch runs (``lakehouse_baseline.py``), built once per session."""

from __future__ import annotations

import pytest
from lakehouse_baseline import Baseline, build_baseline
from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def baseline(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Baseline:
    return build_baseline(spark, tmp_path_factory.mktemp("lakehouse") / "warehouse")

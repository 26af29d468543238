"""The PySpark classes sparkdelta wraps, for classic and Spark Connect sessions alike.

PySpark 4 has two implementations of one API: classic (py4j to a JVM in this process)
and Spark Connect (gRPC to a Spark server). Each has its own session, DataFrame, reader
and writer classes, and ``pyspark-client`` ships only the Connect ones. sparkdelta wraps
both families with the same functions; the two attributes that differ between them (where
a reader keeps its session, what a writer holds of its rows) are read here, and nowhere
else.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class Family:
    """One implementation's classes (``Any``: sparkdelta sets methods on them)."""

    name: str
    session: Any
    dataframe: Any
    reader: Any
    writer: Any
    writer_v2: Any
    stream_reader: Any
    stream_writer: Any
    conf: Any


_MODULES = {
    "classic": {
        "session": ("pyspark.sql.session", "SparkSession"),
        "dataframe": ("pyspark.sql.classic.dataframe", "DataFrame"),
        "reader": ("pyspark.sql.readwriter", "DataFrameReader"),
        "writer": ("pyspark.sql.readwriter", "DataFrameWriter"),
        "writer_v2": ("pyspark.sql.readwriter", "DataFrameWriterV2"),
        "stream_reader": ("pyspark.sql.streaming.readwriter", "DataStreamReader"),
        "stream_writer": ("pyspark.sql.streaming.readwriter", "DataStreamWriter"),
        "conf": ("pyspark.sql.conf", "RuntimeConfig"),
    },
    "connect": {
        "session": ("pyspark.sql.connect.session", "SparkSession"),
        "dataframe": ("pyspark.sql.connect.dataframe", "DataFrame"),
        "reader": ("pyspark.sql.connect.readwriter", "DataFrameReader"),
        "writer": ("pyspark.sql.connect.readwriter", "DataFrameWriter"),
        "writer_v2": ("pyspark.sql.connect.readwriter", "DataFrameWriterV2"),
        "stream_reader": ("pyspark.sql.connect.streaming.readwriter", "DataStreamReader"),
        "stream_writer": ("pyspark.sql.connect.streaming.readwriter", "DataStreamWriter"),
        "conf": ("pyspark.sql.connect.conf", "RuntimeConf"),
    },
}


def _load(name: str) -> Family | None:
    """The family's classes, or None when this PySpark lacks them (no classic in
    ``pyspark-client``; no Connect without its gRPC dependencies)."""
    classes: dict[str, Any] = {}
    try:
        for role, (module, attribute) in _MODULES[name].items():
            classes[role] = getattr(importlib.import_module(module), attribute)
    except ImportError:
        return None
    return Family(name, **classes)


def families() -> list[Family]:
    """The implementations this PySpark has, classic first."""
    return [family for family in (_load("classic"), _load("connect")) if family is not None]


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (a client of a Spark server)."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def reader_session(reader: Any) -> SparkSession:
    """The session of a ``DataFrameReader`` or ``DataStreamReader`` (classic keeps it as
    ``_spark``, Connect as ``_client``)."""
    found = reader.__dict__.get("_spark") or reader.__dict__.get("_client")
    assert found is not None, f"no session on {type(reader).__name__}"
    return found


def writer_rows(writer: Any) -> DataFrame:
    """The rows a ``DataFrameWriter`` or ``DataFrameWriterV2`` writes (Connect keeps their plan)."""
    rows = writer._df
    if isinstance(rows, DataFrame):
        return rows
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    return ConnectDataFrame(rows, writer._spark)

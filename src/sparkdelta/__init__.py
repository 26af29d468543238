"""sparkdelta: Delta Lake in Python, with PySpark as its engine."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["configure", "spark_session", "sql"]


def __getattr__(name: str) -> Any:
    # PySpark is imported only when a Spark surface is used (the CLI and kernel stay light).
    if name in __all__:
        from . import spark

        return getattr(spark, name)
    raise AttributeError(name)

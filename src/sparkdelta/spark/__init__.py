"""The PySpark engine: ``format("delta")`` reads and writes on Spark's native Parquet I/O.

The wings, as delta-spark has them: ``read/`` (snapshots as native Parquet scans, file
pruning, the change feed), ``write/`` (DataFrames into tables: schema, stats,
constraints), ``commands/`` (DML, OPTIMIZE, VACUUM, ALTER and the rest), ``sql/`` (Delta's
SQL on sqlglot), with ``session.py`` and ``hooks.py`` routing Spark's own API to them.
"""

from __future__ import annotations

import importlib.util
from typing import Any

if importlib.util.find_spec("pyspark") is None:
    raise ImportError(
        "sparkdelta's Spark surfaces need PySpark: pip install 'sparkdelta[spark]' (a local or cluster Spark) "
        "or 'sparkdelta[connect]' (a Spark Connect client, no JVM); a Spark runtime's own pyspark does too"
    )

__all__ = ["configure", "spark_session"]


def __getattr__(name: str) -> Any:
    # Importing a wing (say ``spark.paths``) must not load the session hooks and every command.
    if name in __all__:
        from . import session

        return getattr(session, name)
    raise AttributeError(name)

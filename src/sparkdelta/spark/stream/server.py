"""Whether a Spark Connect server can run sparkdelta's streaming code.

A Delta stream runs sparkdelta inside Spark: the ``delta`` stream reader is a Python data
source whose methods Spark calls in Python processes of its own, and the Delta sink is a
``foreachBatch`` function. On a classic session those processes run this interpreter
(``PYSPARK_PYTHON``). On Spark Connect they run on the *server*: Spark pickles the source
class and the sink function by reference, and the server's Python must import the same
sparkdelta (Connect runs the ``foreachBatch`` function there with a Connect session of its
own, so sparkdelta's DataFrame code then works as in the client).

A server that cannot would fail the query with a ``ModuleNotFoundError`` from deep inside
Spark, at the start or at the first batch. So before a stream starts, a one-row job asks
the server's Python which sparkdelta it has (once per session), and the stream is refused
by name when it has none or another version.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ... import __version__
from ...exceptions import DeltaUnsupportedOperationException
from ..pyspark_classes import is_connect

_KNOWN = "_sparkdelta_server_version"
_MISSING = ""


def require_server_sparkdelta(spark: SparkSession, what: str) -> None:
    """Refuse ``what`` (a streaming API, named for the message) on a Connect session whose
    server cannot import this sparkdelta; nothing to check on a classic session."""
    if not is_connect(spark):
        return
    found = spark.__dict__.get(_KNOWN)
    if found is None:
        found = spark.__dict__[_KNOWN] = _server_version(spark, what)
    if found == __version__:
        return
    has = "cannot import sparkdelta" if found == _MISSING else f"has sparkdelta {found}"
    raise DeltaUnsupportedOperationException(
        f"{what} on Spark Connect runs sparkdelta in the Spark server's Python processes (a Python data source "
        f"or a foreachBatch function), and the server's Python {has}, not sparkdelta {__version__} as this client. "
        f"Install sparkdelta {__version__} in the Python the server runs (its driver and executors), or run the "
        "stream from a classic session.",
    )


def _server_version(spark: SparkSession, what: str) -> str:
    """The sparkdelta version the server's Python imports, ``_MISSING`` if none."""

    def probe() -> str:  # nested, so pickled by value: the server needs no sparkdelta to run it
        import importlib.util

        if importlib.util.find_spec("sparkdelta") is None:
            return ""
        import sparkdelta

        return str(sparkdelta.__version__)

    try:
        row: Any = spark.range(1).select(F.udf(probe, "string")().alias("version")).first()
    except Exception as error:  # the server runs no Python at all: no Python data source or foreachBatch either
        raise DeltaUnsupportedOperationException(
            f"{what} on Spark Connect runs sparkdelta in the Spark server's Python processes, and the server could "
            f"not run Python: {error}",
        ) from error
    return str(row[0] or _MISSING)

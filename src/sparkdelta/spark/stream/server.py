"""Whether a Spark Connect server can run sparkdelta's streaming code.

A Delta stream runs sparkdelta inside Spark: the ``delta`` stream reader is a Python data
source whose methods Spark calls in Python processes of its own, and the Delta sink is a
``foreachBatch`` function. On a classic session those processes run this interpreter
(``PYSPARK_PYTHON``). On Spark Connect they run on the *server*: Spark pickles the source
class and the sink function by reference, and the server's Python must import the same
sparkdelta (Connect runs the ``foreachBatch`` function there with a Connect session of its
own, so sparkdelta's DataFrame code then works as in the client).

A server that cannot would fail the query with a ``ModuleNotFoundError`` from deep inside
Spark, at the start or at the first batch. So before a stream starts, the server's Python
is asked which sparkdelta it has (once per session, no job), and the stream is refused by
name when it has none or another version.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StringType, StructField, StructType

from ... import __version__
from ...exceptions import DeltaUnsupportedOperationException
from ..pyspark_classes import is_connect

_KNOWN = "_sparkdelta_server_version"
_MISSING = ""
_SHIPPED = "shipped"  # as a session artifact, which the stream's processes do not see


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
    if found == _MISSING:
        has = "cannot import sparkdelta"
    elif found == _SHIPPED:
        has = "has sparkdelta only as a session artifact (spark.addArtifacts), which a stream's Python processes do not see"
    else:
        has = f"has sparkdelta {found}, not {__version__} as this client"
    raise DeltaUnsupportedOperationException(
        f"{what} on Spark Connect runs sparkdelta in the Spark server's Python processes (a Python data source "
        f"or a foreachBatch function), and the server's Python {has}. Install sparkdelta {__version__} in the "
        "Python the server runs (its driver and executors), or run the stream from a classic session."
    )


def _server_version(spark: SparkSession, what: str) -> str:
    """The sparkdelta version the server's Python data source processes import, ``_MISSING``
    if none, ``_SHIPPED`` if only from the session's artifacts.

    Asked of the process kind that runs a stream's code, not of a UDF worker: the server
    puts the session's Python artifacts (``spark.addArtifacts(..., pyfile=True)``) on the
    path of UDF workers only, so a sparkdelta shipped that way reaches neither a Python data
    source nor a ``foreachBatch`` function. A probe data source answers in its schema's
    one column name (``v`` and the version, ``a`` for an artifact's), which Spark asks for
    when the read is analyzed, in a process that does see the artifacts.
    """

    class ServerProbe(DataSource):  # nested, so pickled by value: the server needs no sparkdelta to run it
        @classmethod
        def name(cls) -> str:
            return "sparkdelta_server_probe"

        def schema(self) -> StructType:
            from pyspark import SparkFiles

            try:
                import sparkdelta
            except ImportError:
                return StructType([StructField("v", StringType())])
            shipped = str(sparkdelta.__file__).startswith(SparkFiles.getRootDirectory())
            return StructType([StructField(("a" if shipped else "v") + str(sparkdelta.__version__), StringType())])

    try:
        spark.dataSource.register(ServerProbe)
        column = spark.read.format(ServerProbe.name()).load().columns[0]
    except Exception as error:  # the server runs no Python at all: no Python data source or foreachBatch either
        raise DeltaUnsupportedOperationException(
            f"{what} on Spark Connect runs sparkdelta in the Spark server's Python processes, and the server could "
            f"not run Python: {error}"
        ) from error
    return _SHIPPED if column.startswith("a") else column[1:]

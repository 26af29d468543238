"""Whether a Spark Connect server sees the table files this process sees.

sparkdelta's kernel runs in the client and reads the table's log itself; the Spark server
reads and writes the data files. On an object store both reach the same bucket. A local
path is another matter: a Connect server on another machine has its own ``/data``, and
would read no files, or files of another table. So before a Connect session reads a
table on local disk, the server is asked for one of the log files the client has just
read (a file lookup, no job); a server that lacks it is refused by name, with the
reason. Writes check the same from the other side: the client must find the files the
server wrote (``write/dataframe.py``).
"""

from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from ..exceptions import DeltaIllegalArgumentException
from ..kernel import Snapshot
from .paths import is_object_store, read_path, scan_options
from .pyspark_classes import is_connect

_SEEN = "_sparkdelta_server_sees"


def unseen_path_error(location: str) -> DeltaIllegalArgumentException:
    """The refusal of a local table the Connect server cannot see."""
    return DeltaIllegalArgumentException(
        f"{location}: the Spark Connect server does not see this local path as this process does (it runs on "
        "another machine, or in a container). sparkdelta reads the Delta log here and Spark reads and writes "
        "the data there, so both must see the same files: put the table on an object store (s3://, abfss://, "
        "gs://) or on a file system mounted at the same path on both"
    )


def check_server_sees(spark: SparkSession, snapshot: Snapshot) -> None:
    """Refuse a local table whose log the Connect server does not see (once per table root and session)."""
    root = snapshot.table_root
    if not is_connect(spark) or is_object_store(root):
        return
    seen: set[str] = spark.__dict__.setdefault(_SEEN, set())
    if root in seen:
        return
    segment = snapshot.segment
    probe = (segment.deltas or segment.checkpoint)[-1].status.path
    try:
        spark.read.format("text").options(**scan_options(spark)).load(read_path(spark, probe)).schema  # noqa: B018 - analysis
    except AnalysisException as error:
        if error.getCondition() == "PATH_NOT_FOUND":
            raise unseen_path_error(root) from error
        raise
    seen.add(root)

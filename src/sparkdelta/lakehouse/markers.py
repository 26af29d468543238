"""Progress kept inside the tables themselves, as Delta app transactions (``txn`` actions).

Each layer records how far it has read its input in its own table's log: bronze the last
landing batch it ingested, silver (and quarantine) the last bronze batch they hold, each
gold table the last silver version folded in. A write that carries ``txnAppId`` /
``txnVersion`` commits its rows and its progress atomically, so a crash can never leave
the two out of step, and nothing outside the tables (no checkpoint file) can drift.

DELETE, UPDATE and MERGE cannot carry a ``txn`` in sparkdelta (nor userMetadata), so after
a MERGE the layer commits the marker on its own: an empty append with the ``txn``. A
crash between the two commits is covered by the layers themselves (silver's MERGE only
applies rows newer than the table's; gold's MERGE writes absolute values, see gold.py).
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from ..kernel import Snapshot, TableNotFoundError
from .warehouse import Location, table_at

BRONZE = "lakehouse.bronze"  # in bronze: the last landing batch ingested
SILVER = "lakehouse.silver"  # in silver and quarantine: the last bronze batch refined
GOLD = "lakehouse.gold"  # in each gold table: the last silver version aggregated

NONE = 0  # batch ids start at 1, so 0 means "nothing yet"


def snapshot(path: Location) -> Snapshot | None:
    """The table's latest snapshot, or None before its first commit."""
    try:
        return table_at(path).snapshot()
    except TableNotFoundError:
        return None


def version(path: Location) -> int | None:
    found = snapshot(path)
    return None if found is None else found.version


def progress(found: Snapshot | None, app_id: str, default: int = NONE) -> int:
    """The ``txnVersion`` last committed under ``app_id``, or ``default``."""
    if found is None:
        return default
    txn = found.app_transactions.get(app_id)
    return default if txn is None else txn.version


def commit_marker(spark: SparkSession, path: Location, schema: StructType, app_id: str, done: int, note: str) -> None:
    """Record ``done`` under ``app_id`` in a commit with no rows (``note`` becomes its userMetadata)."""
    (
        spark.createDataFrame([], schema)
        .write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", done)
        .option("userMetadata", note)
        .save(str(path))
    )


def version_at_progress(path: Location, app_id: str) -> int:
    """The latest version whose rows are exactly those the table's recorded progress accounts for.

    That is the latest version unless a MERGE committed after the marker commit (a run
    died between its MERGE and its marker): then it is the version before that MERGE.
    Found by walking back while the snapshot's ``txn`` for ``app_id`` stays the same.
    """
    table = table_at(path)
    latest = table.snapshot()
    done = progress(latest, app_id, default=-1)
    at = latest.version
    readable = latest.version
    while at >= 0:
        older = table.snapshot(version=at)
        if progress(older, app_id, default=-1) != done:
            break
        if (older.commit_info or {}).get("operation") == "MERGE":
            readable = at - 1
        at -= 1
    return readable

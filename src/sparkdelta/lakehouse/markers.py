"""Progress kept inside the tables themselves, as Delta app transactions (``txn`` actions).

Each layer records how far it has read its input in its own table's log: bronze the last
landing batch it ingested, silver (and quarantine) the last bronze batch they hold, each
gold table the last silver version folded in. The commit that changes a table carries
its progress, so a crash can never leave the two out of step, and nothing outside the
tables (no checkpoint file) can drift: appends with the ``txnAppId`` / ``txnVersion``
write options, MERGEs under ``app_transaction`` (delta-spark's session settings, which
DELETE, UPDATE and MERGE read). Either way a batch the table already holds is skipped.

In stream mode (streams.py) Spark's checkpoints say what each query has read, and the
tables record the micro-batches they hold, so that one Spark replays is skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from pyspark.sql import SparkSession

from ..kernel import Snapshot, TableNotFoundError
from .warehouse import Location, table_at

BRONZE = "lakehouse.bronze"  # in bronze: the last landing batch ingested
SILVER = "lakehouse.silver"  # in silver and quarantine: the last bronze batch refined
GOLD = "lakehouse.gold"  # in each gold table: the last silver version aggregated

SILVER_STREAM = "lakehouse.stream.silver"  # in silver and quarantine: silver's query's last micro-batch
GOLD_STREAM = "lakehouse.stream.gold"  # in each gold table: gold's query's last micro-batch

NONE = 0  # batch ids start at 1, so 0 means "nothing yet"

# delta-spark's session settings for idempotent DML (the app uses public surfaces only).
_TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


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


class Progress(NamedTuple):
    """What a commit records: ``version`` under ``app_id``, with ``note`` as its userMetadata."""

    app_id: str
    version: int
    note: str


@contextmanager
def app_transaction(spark: SparkSession, app_id: str, done: int, note: str) -> Iterator[None]:
    """Commits inside the block record ``done`` under ``app_id`` (``note`` as their userMetadata),
    and are skipped if the table holds it already; the session's own settings are restored after."""
    previous = {key: spark.conf.get(key, None) for key in (_TXN_APP_ID, _TXN_VERSION, _USER_METADATA)}
    spark.conf.set(_TXN_APP_ID, app_id)
    spark.conf.set(_TXN_VERSION, str(done))
    spark.conf.set(_USER_METADATA, note)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)

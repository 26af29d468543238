"""Idempotent writes and DML: delta-spark's ``txnAppId`` / ``txnVersion`` (``DeltaCommand.scala``).

A job that may be re-run names itself (an application id) and numbers its batches (a
version). The commit of a batch carries a ``txn`` action with both, atomically with its
data, and a write or DELETE / UPDATE / MERGE whose table already holds a ``txn`` of that
application at that version or later is skipped: a retried batch cannot apply twice.

Where the pair comes from, as in delta-spark: a DataFrame write's options
``txnAppId`` / ``txnVersion`` when given (both, ``DeltaOptions.parse`` checks), else the
session settings ``spark.databricks.delta.write.txnAppId`` / ``.txnVersion``, which DML
reads too; one of those set without the other is refused before anything runs. With
``spark.databricks.delta.write.txnVersion.autoReset.enabled``, the session's version is
unset once a command has used it (built its ``txn``, or been skipped), so a forgotten
setting cannot silently skip the next batch; options are never reset.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from pyspark.sql import SparkSession

from ...exceptions import DeltaIllegalArgumentException
from ...kernel import SetTransaction, Snapshot, Transaction
from ..conf import TXN_APP_ID, TXN_VERSION, TXN_VERSION_AUTO_RESET, get_bool, get_int, get_str
from ..options import DeltaOptions

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AppTransaction:
    """The application id and version a write commits under; ``from_session`` when they came
    from the session settings (only those are auto-reset)."""

    app_id: str
    version: int
    from_session: bool


def app_transaction(spark: SparkSession, options: DeltaOptions | None = None) -> AppTransaction | None:
    """The write's app transaction: its options' when given, else the session's, else None.

    Raises ``DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS`` when only one of the session
    settings is set (delta-spark's ``getTxnVersionAndAppId``).
    """
    if options is not None and options.txn_app_id is not None and options.txn_version is not None:
        return AppTransaction(options.txn_app_id, options.txn_version, from_session=False)
    app_id = get_str(spark, TXN_APP_ID)
    version = get_int(spark, TXN_VERSION)
    if app_id is None and version is None:
        return None
    if app_id is None or version is None:
        raise DeltaIllegalArgumentException(
            "Invalid options for idempotent Dataframe writes: "
            f"Both {TXN_APP_ID.key} and {TXN_VERSION.key} must be specified for idempotent Delta writes",
            errorClass="DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS",
        )
    return AppTransaction(app_id, version, from_session=True)


def already_committed(spark: SparkSession, snapshot: Snapshot | None, txn: AppTransaction | None) -> bool:
    """Whether ``snapshot`` holds ``txn``'s application at its version or a later one: then the
    write is skipped (delta-spark's ``hasBeenExecuted``), and auto-reset applies."""
    if txn is None or snapshot is None:
        return False
    done = snapshot.app_transactions.get(txn.app_id)
    if done is None or done.version < txn.version:
        return False
    log.info("%s: version %d of application %s is already committed; skipped", snapshot.table_root, txn.version, txn.app_id)
    _auto_reset(spark, txn)
    return True


def set_transaction(spark: SparkSession, transaction: Transaction, txn: AppTransaction) -> SetTransaction:
    """The ``txn`` action the commit carries. A concurrent commit of the same application
    then conflicts with it; auto-reset applies now, as when delta-spark builds the action."""
    transaction.mark_app_transaction_read(txn.app_id)
    _auto_reset(spark, txn)
    return SetTransaction(txn.app_id, txn.version, int(time.time() * 1000))


def _auto_reset(spark: SparkSession, txn: AppTransaction) -> None:
    if txn.from_session and get_bool(spark, TXN_VERSION_AUTO_RESET):
        spark.conf.unset(TXN_VERSION.key)

"""``lakehouse run --stream``: bronze, silver and gold as Structured Streaming queries.

One query per layer, its checkpoint under ``WAREHOUSE/_checkpoints/<layer>``:

- **bronze** reads the landing folder as a CSV file stream (bronze_stream.py) and
  appends it with the Delta sink (``writeStream.format("delta")``, ``mergeSchema``),
  which commits each micro-batch with a ``txn`` of its query id and batch id;
- **silver** reads bronze as a Delta stream and, in ``foreachBatch``, appends the
  micro-batch's invalid lines to quarantine and MERGEs its valid ones, with silver.py's
  validation and MERGE;
- **gold** reads silver's change feed as a Delta stream (silver's MERGEs rewrite files,
  so only its change feed says which rows changed; OPTIMIZE's rewrites carry
  ``dataChange=false`` and the source skips them) and folds each micro-batch into the
  aggregates with gold.py's fold.

Exactly once: Spark replays a micro-batch whose end it had not recorded, so each of
silver's and gold's commits carries a ``txn`` (``SILVER_STREAM`` or ``GOLD_STREAM``, the
batch id), quarantine's through its write options and the MERGEs' through
``markers.app_transaction``, and a replay skips the tables that hold its batch. The
settings are made on the micro-batch's session: Spark gives each query its own, so
queries running side by side never see each other's.

A query that stops because its input gained columns (a landing file's new column, or
bronze's schema after it merged one) is started again, as delta-spark asks: it then
reads on with the new columns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pyspark import StorageLevel
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from . import bronze, bronze_stream, gold, markers, silver
from .bronze import BronzeResult
from .errors import ModeError
from .summary import RunSummary
from .validation import REASON, checked
from .warehouse import Location, Warehouse, table_at

LAYERS = ("bronze", "silver", "gold")
POLL_SECONDS = 0.5
_RESTART_ON = (bronze_stream.NEW_COLUMNS, "DELTA_SCHEMA_CHANGED")  # and DELTA_SCHEMA_CHANGED_WITH_VERSION
_STREAMING_UPDATE = "STREAMING UPDATE"


def _outputs(warehouse: Warehouse) -> dict[str, list[Location]]:
    return {
        "bronze": [warehouse.bronze],
        "silver": [warehouse.silver, warehouse.quarantine],
        "gold": [warehouse.gold(table.name) for table in gold.TABLES],
    }


def check_mode(warehouse: Warehouse, stream: bool) -> None:
    """Refuse to run a warehouse in the mode it was not built in.

    Batch runs number bronze batches from the tables and streams from their checkpoints:
    mixed, the order silver keeps lines by would break, and a stream started over tables
    it did not fill would read its whole input again. So a stream refuses a table that
    holds committed batches (any ``txn``) but whose layer has no checkpoint (built by
    batch runs, or the checkpoint was lost), and a batch run refuses a warehouse with
    checkpoints.
    """
    if not stream:
        started = [layer for layer in LAYERS if warehouse.has_checkpoint(layer)]
        if started:
            raise ModeError(
                f"{warehouse.root} is run as streams (see {warehouse.checkpoint(started[0])}): "
                "run it with --stream; a warehouse keeps the mode it was built in"
            )
        return
    for layer, tables in _outputs(warehouse).items():
        if warehouse.has_checkpoint(layer):
            continue
        for path in tables:
            found = markers.snapshot(path)
            if found is not None and found.app_transactions:
                raise ModeError(
                    f"{path} holds committed batches but {warehouse.checkpoint(layer)} does not exist: the warehouse "
                    "was built by `lakehouse run` without --stream, or the checkpoint was lost (a new one would read "
                    "the input again from its start); a warehouse keeps the mode it was built in"
                )


def _restartable(error: StreamingQueryException) -> bool:
    return any(reason in str(error) for reason in _RESTART_ON)


class _SilverBatches:
    """Silver's ``foreachBatch`` function: a micro-batch of bronze lines into quarantine and silver."""

    def __init__(self, warehouse: Warehouse, retention_hours: float, on_commit: Callable[[str], None], summary: RunSummary):
        self.warehouse = warehouse
        self.retention_hours = retention_hours
        self.on_commit = on_commit
        self.summary = summary

    def __call__(self, lines: DataFrame, batch_id: int) -> None:
        warehouse, result = self.warehouse, self.summary.silver
        quarantined = markers.progress(markers.snapshot(warehouse.quarantine), markers.SILVER_STREAM, -1) >= batch_id
        merged = markers.progress(markers.snapshot(warehouse.silver), markers.SILVER_STREAM, -1) >= batch_id
        if quarantined and merged:
            return
        spark = lines.sparkSession  # the query's own session (see the module's docstring)
        rows = checked(lines).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            count = rows.count()
            if count == 0:  # bronze versions without lines (VACUUM's): nothing to record
                return
            result.rows_in += count
            self.summary.saw_batch("silver", batch_id)
            if not quarantined:
                bad = rows.where(F.col(REASON).isNotNull())
                for reason, n in bad.groupBy(REASON).count().collect():
                    result.quarantined[reason] += n
                silver.append_quarantine(bad, warehouse, markers.SILVER_STREAM, batch_id, self.retention_hours)
                self.on_commit("silver:quarantine")
            if not merged:
                with markers.app_transaction(spark, markers.SILVER_STREAM, batch_id, f"silver holds micro-batch {batch_id}"):
                    silver.merge(spark, rows.where(F.col(REASON).isNull()), warehouse, result)
                self.on_commit("silver:merge")
        finally:
            rows.unpersist()


class _GoldBatches:
    """Gold's ``foreachBatch`` function: a micro-batch of silver's change feed folded into every gold table."""

    def __init__(self, warehouse: Warehouse, on_commit: Callable[[str], None], summary: RunSummary):
        self.warehouse = warehouse
        self.on_commit = on_commit
        self.summary = summary

    def __call__(self, feed: DataFrame, batch_id: int) -> None:
        warehouse, result = self.warehouse, self.summary.gold
        behind = [
            table
            for table in gold.TABLES
            if markers.progress(markers.snapshot(warehouse.gold(table.name)), markers.GOLD_STREAM, -1) < batch_id
        ]
        if not behind:
            return
        spark = feed.sparkSession
        changes = gold.weighted(feed).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            version = F.col(gold.COMMIT_VERSION)
            stats = changes.agg(F.count(F.lit(1)), F.min(version), F.max(version)).first()
            assert stats is not None, "an aggregate without keys has one row"
            count, first, last = stats
            if count == 0:  # silver versions without changed rows (OPTIMIZE, a MERGE that changed none)
                return
            result.change_rows += count
            if result.silver_versions is not None:
                first = min(first, result.silver_versions[0])
            result.silver_versions = (first, last)
            self.summary.saw_batch("gold", batch_id)
            for table in behind:
                note = f"{table.name} holds silver up to version {last} (micro-batch {batch_id})"
                progress = markers.Progress(markers.GOLD_STREAM, batch_id, note)
                keys = gold.fold(spark, warehouse.gold(table.name), table, changes, progress, self.on_commit)
                result.keys[table.name] = result.keys.get(table.name, 0) + keys
        finally:
            changes.unpersist()


class Queries:
    """The layers' queries for one run: each started on demand, and again when its input gained columns."""

    def __init__(
        self,
        spark: SparkSession,
        warehouse: Warehouse,
        retention_hours: float,
        on_commit: Callable[[str], None],
        summary: RunSummary,
    ) -> None:
        self.spark = spark
        self.warehouse = warehouse
        self.retention_hours = retention_hours
        self.summary = summary
        self._silver = _SilverBatches(warehouse, retention_hours, on_commit, summary)
        self._gold = _GoldBatches(warehouse, on_commit, summary)

    def create_tables(self) -> None:
        """Every table a query reads or writes, so that each query can start before the one upstream has run."""
        spark, warehouse = self.spark, self.warehouse
        lines = bronze_stream.landing_stream(spark, warehouse, bronze_stream.landing_columns(warehouse))
        bronze_stream.ensure_table(spark, warehouse.bronze, lines.schema, self.retention_hours)
        silver.ensure_table(spark, warehouse.silver, self.retention_hours)
        for table in gold.TABLES:
            gold.ensure_table(spark, warehouse.gold(table.name), table, self.retention_hours)

    def _writer(self, layer: str) -> DataStreamWriter:
        spark, warehouse = self.spark, self.warehouse
        if layer == "bronze":
            lines = bronze_stream.landing_stream(spark, warehouse, bronze_stream.landing_columns(warehouse))
            return lines.writeStream.format("delta").option("mergeSchema", "true").option("path", str(warehouse.bronze))
        if layer == "silver":
            return spark.readStream.format("delta").load(str(warehouse.bronze)).writeStream.foreachBatch(self._silver)
        feed = spark.readStream.format("delta").option("readChangeFeed", "true").load(str(warehouse.silver))
        return feed.writeStream.foreachBatch(self._gold)

    def start(self, layer: str, trigger: dict[str, Any]) -> StreamingQuery:
        checkpoint = self.warehouse.checkpoint(layer).spark_path
        writer = self._writer(layer).option("checkpointLocation", checkpoint).queryName(f"lakehouse {layer}")
        return writer.trigger(**trigger).start()

    def _restarted(self, layer: str) -> None:
        self.summary.restarts[layer] = self.summary.restarts.get(layer, 0) + 1

    def available_now(self, layer: str) -> None:
        """Run ``layer``'s query until it has read what its input held when it started."""
        while True:
            query = self.start(layer, {"availableNow": True})
            try:
                query.awaitTermination()
                return
            except StreamingQueryException as error:
                if not _restartable(error):
                    raise
                self._restarted(layer)
            finally:
                _stop_between_batches(query)  # a no-op once it ended; on Ctrl-C, it ends it

    def continuous(self, interval_seconds: float, until: Callable[[], bool] | None) -> None:
        """Run every query every ``interval_seconds`` until ``until()`` (if given) or Ctrl-C, then stop them.

        Ctrl-C cancels the running jobs first (pyspark's handler), so a micro-batch in
        progress fails at once and is replayed by the next run.
        """
        trigger = {"processingTime": f"{round(interval_seconds * 1000)} milliseconds"}
        queries: dict[str, StreamingQuery] = {}
        try:
            for layer in LAYERS:
                queries[layer] = self.start(layer, trigger)
            while until is None or not until():
                for layer, query in queries.items():
                    if query.isActive:
                        continue
                    error = query.exception()
                    if error is None or not _restartable(error):
                        raise error or RuntimeError(f"the {layer} query stopped")
                    self._restarted(layer)
                    queries[layer] = self.start(layer, trigger)
                time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            pass  # Ctrl-C: stop the queries cleanly
        finally:
            for query in queries.values():
                _stop_between_batches(query)


def _stop_between_batches(query: StreamingQuery) -> None:
    """Stop ``query`` once no micro-batch runs. A stop that interrupts a ``foreachBatch``
    function inside a Spark call makes Spark match the long Python traceback against a
    backtracking regex, which overflows the stream thread's stack (the batch would be
    replayed all the same, but the query dies with a StackOverflowError on the console)."""
    while query.isActive and query.status["isTriggerActive"]:
        time.sleep(POLL_SECONDS / 5)
    query.stop()


def bronze_result(spark: SparkSession, warehouse: Warehouse, before: int | None, files_before: set[str]) -> BronzeResult:
    """What bronze's query committed since version ``before``: its appends' rows and micro-batches, and the new files."""
    result = BronzeResult()
    after = markers.version(warehouse.bronze)
    if after is None or after == before:
        return result
    commits = table_at(warehouse.bronze).history(limit=after - (-1 if before is None else before))
    batches = []
    for commit in commits:
        info = commit.commit_info
        if info.get("operation") == _STREAMING_UPDATE:
            result.rows += int(info.get("operationMetrics", {}).get("numOutputRows", 0))
            batches.append(int(info["operationParameters"]["epochId"]))
    result.files = sorted(bronze.ingested_files(spark, warehouse.bronze) - files_before)
    result.batches = (min(batches), max(batches)) if batches else None
    return result

"""Running a MERGE as one commit, the way delta-spark's MergeIntoCommand does.

1. **Source.** Materialized once (``localCheckpoint``, counting its rows as it goes), so
   a non-deterministic source gives every later step the same rows. An insert-only merge
   reads the source once and is not materialized
   (``spark.databricks.delta.merge.materializeSource``: ``auto``, ``all``, ``none``).
2. **Insert-only** (only ``whenNotMatchedInsert`` clauses): the source rows with no match
   among the candidate target files (an anti join) are appended. No target file changes,
   so the commit is a blind append. The candidates are pruned by the source's keys even
   when it is not materialized: the anti join's job observes a fingerprint of the keys
   it read (``merge_reads``); if it differs from what the pruning read (a
   non-deterministic source), its files are deleted and the rows appended again against
   every candidate the target's own predicates leave, by one read of the source.
3. **Touched files** (``scanTimeMs``): the source joined with the candidate target rows,
   each carrying its file's path and row index, aggregated per target row (to find one
   matched by several source rows, an error unless the only matched clause is an
   unconditional delete) and per file. A file is touched when a clause changes one of
   its rows; when there are insert clauses, every file with a matched row is, so that the
   rewrite's join sees every match of the source rows it could insert.
4. **Rewrite** (``rewriteTimeMs``): the touched files joined with the source again (a
   full outer join with inserts, else a right outer one); each row's action code picks
   its new values. Copy-on-write removes the touched files and writes their rows that
   stay, updated or copied, with the inserts. With deletion vectors
   (``delta.enableDeletionVectors``) only new and updated rows are written, and the
   changed target rows are marked deleted where they are. With the change data feed,
   pre- and post-images, deletes and inserts go to change data files.
5. **Commit**: operation MERGE with delta-spark's parameters and metrics; nothing to
   commit (no row changed) commits nothing, but for the session's app transaction
   (``DmlCommit``), which is committed alone then.

Row counts come from the Spark jobs that do the work (an ``Observation`` on the write, or
an aggregate over the staged rows), never from a loop in Python, and from a pass of their
own only when Spark loses an observation (a write that got no row, see ``merge_reads.observed``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from ....exceptions import DeltaUnsupportedOperationException
from ....kernel import Snapshot
from ....kernel.command_result import ALREADY_COMMITTED, CommandResult
from ...conf import MERGE_MATERIALIZE_SOURCE, get_str
from ... import row_tracking
from ...read.parquet import read_files
from ...write.checkpoint import checkpointed
from ...write.identity import with_identity_values
from .common import (
    CHANGE_TYPE_COLUMN,
    FILE_PATH_COLUMN,
    ROW_INDEX_COLUMN,
    DmlCommit,
    change_data_feed_enabled,
    deletion_vectors_enabled,
    read_target,
)
from .merge_plan import (
    ACTION,
    COPY,
    DROP,
    SOURCE_PRESENT,
    MergePlan,
    action_column,
    first_clause,
    numbering,
    output_columns,
    quoted,
    resolve,
    with_generated,
)
from .merge_pruning import Candidates, candidate_files
from .merge_reads import observed

if TYPE_CHECKING:
    from .merge import DeltaMergeBuilder

_OLD = "__sparkdelta_merge_old_"


@dataclass
class MergeCounts:
    """Rows the merge read and changed, per kind of clause."""

    source: int = 0
    matched_updated: int = 0
    matched_deleted: int = 0
    not_matched_by_source_updated: int = 0
    not_matched_by_source_deleted: int = 0
    inserted: int = 0
    copied: int = 0

    @property
    def updated(self) -> int:
        return self.matched_updated + self.not_matched_by_source_updated

    @property
    def deleted(self) -> int:
        return self.matched_deleted + self.not_matched_by_source_deleted

    def add(self, plan: MergePlan, by_code: dict[int, int]) -> None:
        """Fold row counts per action code into the clause kinds' counts."""
        for clause in plan.clauses:
            rows = by_code.get(clause.code, 0)
            kind, action = clause.clause.kind, clause.clause.action
            if kind == "notMatched":
                self.inserted += rows
            elif kind == "matched":
                self.matched_updated += rows if action == "update" else 0
                self.matched_deleted += rows if action == "delete" else 0
            else:
                self.not_matched_by_source_updated += rows if action == "update" else 0
                self.not_matched_by_source_deleted += rows if action == "delete" else 0
        self.copied += by_code.get(COPY, 0)


def run_merge(builder: DeltaMergeBuilder) -> CommandResult:
    """Run the merge ``builder`` describes; its commit and delta-spark's MERGE metrics."""
    spark = builder.spark
    table = builder.table
    snapshot = table.snapshot()
    insert_only = all(c.kind == "notMatched" for c in builder.clauses)
    counts = MergeCounts()
    with DmlCommit(spark, table, snapshot, "MERGE", {}) as dml:
        if dml.already_committed():
            return ALREADY_COMMITTED
        dml.metrics["materializeSourceTimeMs"] = 0
        with dml.timed("materializeSourceTimeMs", "materializing the source"):
            source, materialized = _materialized(spark, builder.source, insert_only)
            if materialized is not None:
                counts.source = materialized
        plan = resolve(
            spark, snapshot, source, builder.target_alias, builder.condition, builder.clauses, builder.schema_evolution
        )
        dml.parameters = plan.parameters
        _evolve(dml, plan)
        # Only a materialized source surely yields the same rows twice: no API both kinds of
        # session share says whether a plan is deterministic, so an unmaterialized one's reads are checked.
        stable = materialized is not None
        if insert_only:
            _insert_only(dml, plan, snapshot, counts, stable, counted=materialized is not None)
        else:
            if materialized is None:
                counts.source = plan.source.count()
            _classic(dml, plan, snapshot, counts, stable)
        return dml.commit(_operation_metrics(dml.metrics, counts))


def _materialized(spark: SparkSession, source: DataFrame, insert_only: bool) -> tuple[DataFrame, int | None]:
    """The source, computed once and kept when the merge reads it more than once, and its row count then."""
    mode = get_str(spark, MERGE_MATERIALIZE_SOURCE).lower()
    if mode == "none" or (mode == "auto" and insert_only):
        return source, None
    observation = Observation("merge_source")
    kept = checkpointed(source.observe(observation, F.count(F.lit(1)).alias("rows")))
    read = observed(observation)
    return kept, read["rows"] if read is not None else kept.count()


def _evolve(dml: DmlCommit, plan: MergePlan) -> None:
    """Commit the evolved schema with the merge, and write the merge's files with it.

    The snapshot read stays as it is: the transaction checks conflicts against it, and
    the merge's files are written with the evolved metadata the commit sets.
    """
    if plan.metadata is not None:
        dml.set_metadata(plan.metadata, plan.protocol)


def _by_code(observation: Observation, recount: Callable[[], dict[int, int]]) -> dict[int, int]:
    """Rows per action code, as ``observation`` counted them, else as ``recount()`` does."""
    found = observed(observation)
    return recount() if found is None else {int(code): rows for code, rows in found.items()}


def _code_counts(plan: MergePlan) -> list[Column]:
    """Aggregates counting the rows of each action code (named by the code), for an Observation."""
    codes = [COPY, *[c.code for c in plan.clauses]]
    return [F.count_if(F.col(ACTION) == code).alias(str(code)) for code in codes]


def _partitioned(rows: DataFrame, snapshot: Snapshot) -> DataFrame:
    """One task per partition value, so a partitioned write makes one file per partition, not per task.

    Unpartitioned rows keep the join's partitions, which adaptive execution coalesces to
    its advisory size, cached ones included (``session.py`` lets it change a cached
    plan's partitioning); an extra rebalance shuffle cost a quarter of the merge's time.
    """
    columns = snapshot.partition_columns
    return rows.repartition(*[F.col(quoted(c)) for c in columns]) if columns else rows


def _write_inserts(dml: DmlCommit, plan: MergePlan, sources: DataFrame, counts: MergeCounts) -> None:
    """Append the insert clauses' rows for ``sources`` (source rows that match no target row)."""
    observation = Observation("merge_inserts")
    rows = sources.withColumn(ACTION, first_clause(plan.not_matched, DROP)).observe(observation, *_code_counts(plan))
    rows = rows.where(F.col(ACTION) != DROP).select(*output_columns(plan, copies=False), F.col(ACTION))
    numbered = numbering(plan)
    inserted = with_identity_values(with_generated(plan, rows), plan.schema, numbered)
    dml.add_rows(_partitioned(inserted.drop(ACTION), dml.snapshot), tracked=list(numbered))
    # Lost only when no row was written: every row was dropped, and drops are not counted.
    counts.add(plan, _by_code(observation, dict))


def _insert_only(dml: DmlCommit, plan: MergePlan, snapshot: Snapshot, counts: MergeCounts, stable: bool, counted: bool) -> None:
    """Append the source rows no target row matches; a blind append (no target file is read into the outcome).

    The candidates are pruned by the source's keys; an unmaterialized source's keys are
    checked to be the ones the pruning read, else the pruning is dropped and the rows appended again.
    """
    with dml.timed("scanTimeMs", "finding the candidate target files"):
        candidates = candidate_files(plan, snapshot, source_ranges=True, verify=not stable)
    appended = _append_unmatched(dml, plan, snapshot, candidates, counted)
    if appended is None:
        with dml.timed("scanTimeMs", "finding the candidate target files (the source changed)"):
            candidates = candidate_files(plan, snapshot, source_ranges=False)
        appended = _append_unmatched(dml, plan, snapshot, candidates, counted)
    assert appended is not None  # nothing to verify without source ranges
    counts.inserted, counts.copied = appended.inserted, appended.copied
    if not counted:
        counts.source = appended.source


def _append_unmatched(
    dml: DmlCommit, plan: MergePlan, snapshot: Snapshot, candidates: Candidates, counted: bool
) -> MergeCounts | None:
    """Append the insert clauses' rows for the source rows matching none of ``candidates``; their counts.

    None, with nothing written, when the source's keys were not the ones ``candidates.fingerprint``
    says the pruning read (the source changed between reads): rows matching a pruned file may
    have been written, so they are deleted before anything is committed.
    """
    appended = MergeCounts()
    fingerprint = candidates.fingerprint
    sources = plan.source
    observation = Observation("merge_source")
    watched = fingerprint is not None or not counted
    if watched:
        aggregates = fingerprint.columns() if fingerprint is not None else [F.count(F.lit(1)).alias("rows")]
        sources = sources.observe(observation, *aggregates)
    if candidates.files.num_rows:
        sources = sources.join(plan.target(read_files(dml.spark, snapshot, candidates.files)), plan.condition, "left_anti")
    mark = dml.mark()
    with dml.timed("rewriteTimeMs", "writing the inserted rows"):
        _write_inserts(dml, plan, sources, appended)
    read = observed(observation) if watched else None
    # Other keys (or a lost observation) with no row written wrote none wrongly either.
    wrote = dml.metrics["numAddedFiles"] > mark.metrics["numAddedFiles"]
    if fingerprint is not None and wrote and not fingerprint.matches(read):
        dml.discard_since(mark)
        return None
    if not counted:
        appended.source = read["rows"] if read is not None else plan.source.count()
    return appended


def _any_condition(clauses: list) -> Column:
    """Whether any of ``clauses`` would act (a NULL condition does not)."""
    if not clauses:
        return F.lit(False)
    result: Column | None = None
    for clause in clauses:
        condition = F.coalesce(clause.condition, F.lit(False)) if clause.condition is not None else F.lit(True)
        result = condition if result is None else result | condition
    assert result is not None
    return result


def _only_unconditional_delete(plan: MergePlan) -> bool:
    return len(plan.matched) == 1 and plan.matched[0].deletes and plan.matched[0].condition is None


def _touched_files(dml: DmlCommit, plan: MergePlan, snapshot: Snapshot, files: pa.Table) -> tuple[pa.Table, int]:
    """The files the merge rewrites (or marks rows of), and how many extra matches multiple matches made.

    One job: the join, aggregated per target row (rows no source row matches are counted
    together per file) and then per file; one row per touched file reaches the driver.
    """
    if files.num_rows == 0:
        return files, 0
    joined = plan.joined(read_target(dml.spark, snapshot, files), "right" if plan.not_matched_by_source else "inner")
    pair = F.col(SOURCE_PRESENT).isNotNull()
    touch = pair if plan.not_matched else pair & _any_condition(plan.matched)
    if plan.not_matched_by_source:
        touch = touch | (~pair & _any_condition(plan.not_matched_by_source))
    row = F.when(pair, F.col(ROW_INDEX_COLUMN)).otherwise(F.lit(-1))
    per_row = joined.groupBy(F.col(FILE_PATH_COLUMN), row.alias("row")).agg(
        F.count(SOURCE_PRESENT).alias("matches"), F.max(touch.cast("int")).alias("touch")
    )
    per_file = per_row.groupBy(FILE_PATH_COLUMN).agg(
        F.max("matches").alias("matches"),
        F.sum(F.greatest(F.col("matches") - 1, F.lit(0))).alias("extra"),
        F.max("touch").alias("touch"),
    )
    found = per_file.where("touch = 1 OR matches > 1").collect()
    repeated = [r for r in found if r["matches"] > 1]
    if repeated and plan.matched and not _only_unconditional_delete(plan):
        raise DeltaUnsupportedOperationException(
            "Cannot perform Merge as multiple source rows "
            "matched and attempted to modify the same target row in the Delta table in possibly conflicting ways. "
            f"Merge condition: {plan.parameters['predicate']}. By SQL semantics of Merge, when multiple source rows "
            "match on the same target row, the result may be ambiguous as it is unclear which source row should be "
            "used to update or delete the matching target row. You can preprocess the source table to eliminate "
            "the possibility of multiple matches. Nothing was committed.",
            errorClass="DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE",
        )
    paths = pa.array([r[FILE_PATH_COLUMN] for r in found if r["touch"] == 1], pa.string())
    return files.filter(pc.is_in(files.column("path"), value_set=paths)), sum(int(r["extra"]) for r in repeated)


def _classic(dml: DmlCommit, plan: MergePlan, snapshot: Snapshot, counts: MergeCounts, stable: bool) -> None:
    """A merge with matched or not-matched-by-source clauses: find the touched files, then rewrite."""
    with dml.timed("scanTimeMs", "finding the files the merge touches"):
        candidates = candidate_files(plan, snapshot, source_ranges=stable)
        dml.read(candidates.files, predicate=candidates.predicate)
        touched, extra = _touched_files(dml, plan, snapshot, candidates.files)
    if touched.num_rows == 0:
        if plan.not_matched:  # no source row matches any target row: all may be inserted
            with dml.timed("rewriteTimeMs", "writing the inserted rows"):
                _write_inserts(dml, plan, plan.source, counts)
        return
    with dml.timed("rewriteTimeMs", f"rewriting {touched.num_rows} files"):
        _rewrite(dml, plan, snapshot, touched, extra, counts)


def _codes(plan: MergePlan, *actions: str) -> list[int]:
    return [c.code for c in plan.clauses if c.clause.action in actions]


def _rewrite(dml: DmlCommit, plan: MergePlan, snapshot: Snapshot, touched: pa.Table, extra: int, counts: MergeCounts) -> None:
    """Write the touched files' changes: copy-on-write, or new rows and deletion vectors."""
    spark = dml.spark
    vectors = deletion_vectors_enabled(snapshot)
    changes = change_data_feed_enabled(snapshot)
    addressed = vectors or changes
    tracked = row_tracking.preserves(snapshot)
    target = read_target(spark, snapshot, touched) if addressed or tracked else read_files(spark, snapshot, touched)
    inserts, unmatched = bool(plan.not_matched), bool(plan.not_matched_by_source)
    if vectors:  # only changed and new rows are written: the narrowest join that has them
        how = {(False, False): "inner", (True, False): "left", (False, True): "right", (True, True): "full"}[(inserts, unmatched)]
    else:
        how = "full" if inserts else "right"
    frame = plan.joined(target, how).withColumn(ACTION, action_column(plan))
    if vectors:
        frame = frame.where(~F.col(ACTION).isin(COPY, DROP))
    columns = [*output_columns(plan), F.col(ACTION)]
    if changes:
        columns += [plan.old_value(f).alias(f"{_OLD}{i}") for i, f in enumerate(plan.schema.fields)]
    if addressed:
        columns += [F.col(FILE_PATH_COLUMN), F.col(ROW_INDEX_COLUMN)]
    if tracked:  # a copied row keeps its id and version, an updated one its id, an inserted one neither
        copied = F.col(ACTION) == COPY
        version = F.when(copied, F.col(row_tracking.ROW_COMMIT_VERSION)).alias(row_tracking.ROW_COMMIT_VERSION)
        columns += [F.col(row_tracking.ROW_ID), version]
    numbered = numbering(plan)
    staged = with_identity_values(with_generated(plan, frame.select(*columns)), plan.schema, numbered)
    names = [F.col(quoted(f.name)) for f in plan.schema.fields]
    kept = names + [F.col(c) for c in (row_tracking.COLUMNS if tracked else ())]  # what the written rows carry
    removed = [DROP, *_codes(plan, "delete")]
    if not addressed:  # one job: the write, counting actions as it goes
        observation = Observation("merge_rows")
        staged = staged.observe(observation, *_code_counts(plan))
        dml.remove_files(touched)
        dml.add_rows(_partitioned(staged.where(~F.col(ACTION).isin(removed)).select(*kept), dml.snapshot), list(numbered))
        # Lost when every row was deleted: the deletes are counted again then.
        counts.add(plan, _by_code(observation, lambda: _count_by_code(staged)))
        _correct_deletes(counts, extra)
        return
    staged = staged.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts.add(plan, _count_by_code(staged))
        _correct_deletes(counts, extra)
        if vectors:
            changed = staged.where(F.col(ACTION).isin(_codes(plan, "update", "delete")))
            dml.delete_rows(touched, changed.select(FILE_PATH_COLUMN, ROW_INDEX_COLUMN))
            written = staged.where(F.col(ACTION).isin(_codes(plan, "update", "insert")))
        else:
            dml.remove_files(touched)
            written = staged.where(~F.col(ACTION).isin(removed))
        dml.add_rows(_partitioned(written.select(*kept), dml.snapshot), list(numbered))
        if changes:  # from the same cached rows: their identity values are the ones written
            dml.add_changes(_change_rows(plan, staged, names, dedupe=extra > 0))
    finally:
        staged.unpersist()


def _count_by_code(staged: DataFrame) -> dict[int, int]:
    """Rows of each action code, by a job of its own."""
    return {int(r[0]): int(r[1]) for r in staged.groupBy(ACTION).count().collect()}


def _correct_deletes(counts: MergeCounts, extra: int) -> None:
    """A target row several source rows matched (an unconditional delete) was deleted once, not once per match."""
    counts.matched_deleted -= extra


def _change_rows(plan: MergePlan, staged: DataFrame, names: list[Column], dedupe: bool) -> DataFrame:
    """The change data feed's rows: pre- and post-images of updates, deleted rows, inserted rows."""
    updates = _codes(plan, "update")
    action = F.col(ACTION)
    before = staged.where(action.isin(_codes(plan, "update", "delete")))
    if dedupe:  # a target row several source rows deleted
        before = before.dropDuplicates([FILE_PATH_COLUMN, ROW_INDEX_COLUMN])
    old = [F.col(f"{_OLD}{i}").alias(f.name) for i, f in enumerate(plan.schema.fields)]
    pre = before.select(*old, F.when(action.isin(updates), "update_preimage").otherwise("delete").alias(CHANGE_TYPE_COLUMN))
    after = staged.where(action.isin(_codes(plan, "update", "insert")))
    post = after.select(*names, F.when(action.isin(updates), "update_postimage").otherwise("insert").alias(CHANGE_TYPE_COLUMN))
    return pre.unionByName(post)


def _operation_metrics(shared: dict[str, int], counts: MergeCounts) -> dict[str, int]:
    """delta-spark's MERGE operationMetrics from the shared DML counters and the row counts.

    The shared counters are moved over under MERGE's names (``numTargetFilesAdded``, ...),
    so the commit records these names only.
    """
    renamed = {
        "numTargetFilesAdded": shared.pop("numAddedFiles"),
        "numTargetFilesRemoved": shared.pop("numRemovedFiles"),
        "numTargetBytesAdded": shared.pop("numAddedBytes"),
        "numTargetBytesRemoved": shared.pop("numRemovedBytes"),
        "numTargetChangeFilesAdded": shared.pop("numAddedChangeFiles"),
        "numTargetDeletionVectorsAdded": shared.pop("numDeletionVectorsAdded"),
        "numTargetDeletionVectorsRemoved": shared.pop("numDeletionVectorsRemoved"),
        "numTargetDeletionVectorsUpdated": shared.pop("numDeletionVectorsUpdated"),
    }
    return {
        "numSourceRows": counts.source,
        "numTargetRowsInserted": counts.inserted,
        "numTargetRowsUpdated": counts.updated,
        "numTargetRowsMatchedUpdated": counts.matched_updated,
        "numTargetRowsNotMatchedBySourceUpdated": counts.not_matched_by_source_updated,
        "numTargetRowsDeleted": counts.deleted,
        "numTargetRowsMatchedDeleted": counts.matched_deleted,
        "numTargetRowsNotMatchedBySourceDeleted": counts.not_matched_by_source_deleted,
        "numTargetRowsCopied": counts.copied,
        "numOutputRows": counts.inserted + counts.updated + counts.copied,
        **renamed,
    }

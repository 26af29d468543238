"""Which target files a MERGE must read: pruning by what the merge condition allows.

Two sources of kernel predicates, both over the target's columns:

- the condition's conjuncts that name only target columns (``t.date = '2024-01-01'``),
  as delta-spark prunes;
- for each conjunct ``target column = expression over the source``, the range of the
  source's values (one small aggregate over the materialized source): a target row
  outside ``[min, max]`` can match no source row. Partitioned tables keep only the
  partitions the source's keys reach; data skipping does the same with column stats.
  A NULL never equals anything, so a source whose keys are all NULL matches no file.
- then, for one such key on a data column, the files whose own ``[min, max]`` holds some
  source key (a broadcast range join of the source's keys with the candidates' stats):
  an upsert whose updates hit 10 of 200 files reads those 10, although its inserts'
  keys stretch the source's range over every file.

Not-matched-by-source clauses act on target rows no source row matches, so their files
are kept too, pruned by the clauses' own conditions when they name target columns only.

The source's ranges hold for the merge's own read of the source only if that read sees
the same keys. A materialized source does; for one that is not (an insert-only merge's),
``verify`` fingerprints the keys each pruning job read (``merge_reads``): the key join's
narrowing stands only if its read matches the aggregate's, and the caller checks its own
read against ``Candidates.fingerprint`` before it commits.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, Observation
from pyspark.sql import functions as F

from ....kernel import Snapshot
from ....kernel import skipping as S
from ...expressions import Relation, resolve_condition
from ...expressions.kernel import to_predicate
from ...expressions.resolve import references
from ...expressions.spark_types import comparison_type, exact_widening
from ...expressions.tree import Call, Col, Expr, conjuncts
from .merge_plan import MergePlan, quoted
from .merge_reads import KeyFingerprint, fingerprint_columns, observed

# Range pruning is sound only where min/max order is the column's own order.
_RANGE_TYPES = {"byte", "short", "integer", "long", "string", "date", "timestamp", "timestamp_ntz"}
# The range join compares every source key with every candidate's bounds: past this many
# candidates the source's overall range alone decides.
MAX_FILES_FOR_KEY_JOIN = 10_000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Candidates:
    """The target files a merge reads, and the kernel predicate that chose them (None: all files).

    ``fingerprint``: what the pruning's reads of the source saw of its keys, when they were
    verified (``verify``) and the pruning read the source at all; a read of the source that
    then joins these files must match it, else the pruning may have left out its matches.
    """

    files: pa.Table
    predicate: S.Predicate | None
    fingerprint: KeyFingerprint | None = None


def _side_column(expr: Expr, alias: str) -> Col | None:
    """A top-level column of the side named ``alias``."""
    return expr if isinstance(expr, Col) and expr.qualifier == alias and len(expr.path) == 1 else None


def _key(conjunct: Expr, plan: MergePlan) -> tuple[str, str, str] | None:
    """(target column, its type name, source column SQL) of ``target.k = source.k``, when the
    comparison's implicit casts keep both sides' order (so the source's range is the keys')."""
    if not (isinstance(conjunct, Call) and conjunct.name == "=" and len(conjunct.args) == 2):
        return None
    left, right = conjunct.args
    for mine, theirs in ((left, right), (right, left)):
        target, source = _side_column(mine, plan.target_alias), _side_column(theirs, plan.source_alias)
        if target is None or source is None or target.type.typeName() not in _RANGE_TYPES:
            continue
        common = comparison_type(target.type, source.type)
        if common is not None and exact_widening(target.type, common) and exact_widening(source.type, common):
            return target.path[0], target.type.typeName(), quoted(plan.source_alias, source.path[0])
    return None


def _bound(sql: str, type_name: str) -> Column:
    """A source key as aggregated for its range: timestamps as epoch microseconds, which both
    kinds of session collect alike (a collected datetime's zone depends on the client)."""
    return F.unix_micros(F.expr(sql)) if type_name == "timestamp" else F.expr(sql)


def _literal(value: Any, type_name: str) -> S.Literal | None:
    """A collected bound as a kernel literal (timestamps as UTC instants, as ``predicates`` makes them)."""
    if type_name == "timestamp":
        return S.Literal(_EPOCH + dt.timedelta(microseconds=value)) if isinstance(value, int) else None
    if isinstance(value, (int, str, dt.date, Decimal)) and not isinstance(value, bool):
        return S.Literal(value)
    return None


def _and(predicates: list[S.Predicate]) -> S.Predicate | None:
    result: S.Predicate | None = None
    for predicate in predicates:
        result = predicate if result is None else S.And(result, predicate)
    return result


def _keep(snapshot: Snapshot, predicate: S.Predicate | None) -> pa.Array:
    """Which of the snapshot's files a scan filtered by ``predicate`` selects."""
    return snapshot.scan(predicate).selection


def _relations(plan: MergePlan) -> list[Relation]:
    return [Relation(plan.target_schema, plan.target_alias), Relation(plan.source.schema, plan.source_alias)]


def candidate_files(plan: MergePlan, snapshot: Snapshot, source_ranges: bool, verify: bool = False) -> Candidates:
    """The files that may hold a target row some clause acts on (see the module docstring).

    ``source_ranges`` allows the aggregate over the source and the key join; without
    ``verify`` the source must be materialized, so that their keys are the ones the merge
    then joins; with it, they fingerprint the keys they read (``Candidates.fingerprint``).
    """
    matching, matches_nothing, keys, fingerprint = _matching_predicate(plan, source_ranges, verify)
    files = snapshot.scan().files
    keep = pa.array([False] * files.num_rows, pa.bool_()) if matches_nothing else _keep(snapshot, matching)
    partitions = {c.lower() for c in snapshot.partition_columns}
    data_keys = [k for k in keys if k[0].lower() not in partitions]
    if data_keys and not matches_nothing:
        keep = _holding_source_keys(plan, snapshot, files, keep, data_keys[0], fingerprint)
    predicate = matching
    if plan.not_matched_by_source:
        unmatched = _not_matched_by_source_predicate(plan)
        keep = pc.or_(keep, _keep(snapshot, unmatched))
        predicate = unmatched if matches_nothing else None if matching is None or unmatched is None else S.Or(matching, unmatched)
    return Candidates(files.filter(keep), predicate, fingerprint)


def _matching_predicate(
    plan: MergePlan, source_ranges: bool, verify: bool
) -> tuple[S.Predicate | None, bool, list[tuple[str, str, str]], KeyFingerprint | None]:
    """The kernel predicate a target row must pass to match a source row; True when no row can match;
    the equality keys (target column, its type, source column) usable for a file-level key join;
    with ``verify``, what the aggregate read of those keys (None: it read no source row)."""
    condition = resolve_condition(plan.spark, plan.condition, _relations(plan))
    found: list[S.Predicate] = []
    ranges: list[tuple[str, str, str]] = []  # (target column, its type, source column SQL)
    for conjunct in conjuncts(condition.expr):
        columns = references(conjunct)
        if columns and all(c.qualifier == plan.target_alias for c in columns):
            predicate = to_predicate(conjunct, condition.time_zone)
            if predicate is not None:
                found.append(predicate)
        elif source_ranges and (key := _key(conjunct, plan)) is not None:
            ranges.append(key)
    fingerprint = None
    if ranges:
        aggregates = [f(_bound(sql, type_name)) for _, type_name, sql in ranges for f in (F.min, F.max)]
        key_sqls = tuple(sql for _, _, sql in ranges)
        bounds = plan.source.agg(*aggregates, *(fingerprint_columns(key_sqls) if verify else [])).collect()[0]
        if verify:
            fingerprint = KeyFingerprint.of(key_sqls, bounds.asDict())
        for i, (name, type_name, _) in enumerate(ranges):
            low, high = bounds[2 * i], bounds[2 * i + 1]
            if low is None:  # no non-null source key: no target row matches
                return None, True, [], fingerprint
            low_literal, high_literal = _literal(low, type_name), _literal(high, type_name)
            if low_literal is not None and high_literal is not None:
                key_column = S.Column((name,))
                found += [S.Compare(">=", key_column, low_literal), S.Compare("<=", key_column, high_literal)]
    return _and(found), False, ranges, fingerprint


def _holding_source_keys(
    plan: MergePlan,
    snapshot: Snapshot,
    files: pa.Table,
    keep: pa.Array,
    key: tuple[str, str, str],
    fingerprint: KeyFingerprint | None,
) -> pa.Array:
    """``keep`` (over ``files``, all the snapshot's scan files) narrowed to files whose stats range holds a
    source key; files without stats stay. With ``fingerprint`` (what the range aggregate read), the
    narrowing stands only if this join read the same keys.

    The join's files are gathered by a global aggregate, whose shuffle always gets a row
    per task, so adaptive execution never drops the observation below it (``observed``).
    """
    name, _, source_sql = key
    candidates = pc.indices_nonzero(keep)
    if not 1 < len(candidates) <= MAX_FILES_FOR_KEY_JOIN:
        return keep
    stats = S.FileStats(files.column("stats").take(candidates).combine_chunks(), snapshot.schema)
    low_bounds, high_bounds = stats.bound("minValues", (name,)), stats.bound("maxValues", (name,))
    if low_bounds is None or high_bounds is None:
        return keep
    low, high = low_bounds.combine_chunks(), high_bounds.combine_chunks()
    known = pc.and_(pc.is_valid(low), pc.is_valid(high))
    bounds = pa.table({"file": candidates.cast(pa.int64()), "low": low, "high": high}).filter(known)
    spark = plan.source.sparkSession
    source = plan.source
    observation = Observation()
    if fingerprint is not None:
        source = source.observe(observation, *fingerprint.columns())
    keys = source.select(F.expr(source_sql).alias("key")).where("key IS NOT NULL")
    ranges = F.broadcast(spark.createDataFrame(bounds))
    held = keys.join(ranges, (F.col("key") >= F.col("low")) & (F.col("key") <= F.col("high")))
    found = held.agg(F.collect_set("file")).collect()[0][0]
    if fingerprint is not None and not fingerprint.matches(observed(observation)):
        return keep  # this read saw other keys than the ranges' read: the ranges alone decide
    hits = pa.array(found, pa.int64())
    unknown = candidates.filter(pc.invert(known)).cast(pa.int64())
    wanted = pa.concat_arrays([hits, unknown])
    return pc.is_in(pa.array(range(len(keep)), pa.int64()), value_set=wanted)


def _not_matched_by_source_predicate(plan: MergePlan) -> S.Predicate | None:
    """Rows a not-matched-by-source clause may act on: the OR of their conditions (None: any row)."""
    either: S.Predicate | None = None
    for clause in plan.not_matched_by_source:
        if clause.condition is None:
            return None
        condition = resolve_condition(plan.spark, clause.condition, _relations(plan)).predicate()
        if condition is None:
            return None
        either = condition if either is None else S.Or(either, condition)
    return either

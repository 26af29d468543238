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
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ....kernel import Snapshot
from ....kernel import skipping as S
from ...read.predicates import exact_widening, to_predicate
from .merge_plan import MergePlan

# Range pruning is sound only where min/max order is the column's own order.
_RANGE_TYPES = {"byte", "short", "integer", "long", "string", "date", "timestamp", "timestamp_ntz"}
# The range join compares every source key with every candidate's bounds: past this many
# candidates the source's overall range alone decides.
MAX_FILES_FOR_KEY_JOIN = 10_000


@dataclass(frozen=True)
class Candidates:
    """The target files a merge reads, and the kernel predicate that chose them (None: all files)."""

    files: pa.Table
    predicate: S.Predicate | None


def _class(expr: Any) -> str:
    return str(expr.getClass().getSimpleName())


def _children(expr: Any) -> list[Any]:
    children = expr.children()
    return [children.apply(i) for i in range(children.size())]


def _conjuncts(expr: Any) -> list[Any]:
    if _class(expr) == "And":
        return [part for child in _children(expr) for part in _conjuncts(child)]
    return [expr]


def _target_column(expr: Any, target: Any) -> tuple[str, str] | None:
    """(name, type) of a top-level target column, possibly under a numeric widening cast."""
    if _class(expr) == "Cast":
        (child,) = _children(expr)
        if exact_widening(str(child.dataType().typeName()), str(expr.dataType().typeName())):
            expr = child
    if _class(expr) == "AttributeReference" and target.contains(expr):
        return str(expr.name()), str(expr.dataType().typeName())
    return None


def _literal(value: Any, type_name: str) -> S.Literal | None:
    """A collected Spark value as a kernel literal (timestamps as UTC instants, as ``predicates`` makes them)."""
    if isinstance(value, dt.datetime) and type_name == "timestamp":
        return S.Literal(value.astimezone(dt.UTC))  # collected as the Python process's local time
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


def candidate_files(plan: MergePlan, snapshot: Snapshot, probe: DataFrame, source_ranges: bool) -> Candidates:
    """The files that may hold a target row some clause acts on (see the module docstring).

    ``probe`` is the source joined with an empty target (``merge_plan``); ``source_ranges``
    allows the aggregate over the source (it must be materialized or deterministic, so
    that its values are the ones the merge then joins).
    """
    join = probe._jdf.queryExecution().analyzed()
    matching, matches_nothing, keys = _matching_predicate(plan, join, source_ranges)
    files = snapshot.scan().files
    keep = pa.array([False] * files.num_rows, pa.bool_()) if matches_nothing else _keep(snapshot, matching)
    partitions = {c.lower() for c in snapshot.partition_columns}
    data_keys = [k for k in keys if k[0].lower() not in partitions]
    if data_keys and not matches_nothing:
        keep = _holding_source_keys(plan, snapshot, files, keep, data_keys[0])
    predicate = matching
    if plan.not_matched_by_source:
        unmatched = _not_matched_by_source_predicate(plan, probe)
        keep = pc.or_(keep, _keep(snapshot, unmatched))
        predicate = unmatched if matches_nothing else None if matching is None or unmatched is None else S.Or(matching, unmatched)
    return Candidates(files.filter(keep), predicate)


def _matching_predicate(
    plan: MergePlan, join: Any, source_ranges: bool
) -> tuple[S.Predicate | None, bool, list[tuple[str, str, str]]]:
    """The kernel predicate a target row must pass to match a source row; True when no row can match;
    the equality keys (target column, its type, source expression) usable for a file-level key join."""
    target, source = join.right().outputSet(), join.left().outputSet()
    found: list[S.Predicate] = []
    ranges: list[tuple[str, str, str]] = []  # (target column, its type, source expression SQL)
    for conjunct in _conjuncts(join.condition().get()):
        if conjunct.references().subsetOf(target):
            predicate = to_predicate(conjunct)
            if predicate is not None:
                found.append(predicate)
        elif _class(conjunct) == "EqualTo" and source_ranges:
            left, right = _children(conjunct)
            for mine, theirs in ((left, right), (right, left)):
                column = _target_column(mine, target)
                if column is not None and column[1] in _RANGE_TYPES and theirs.references().subsetOf(source):
                    ranges.append((column[0], column[1], str(theirs.sql())))
                    break
    if ranges:
        bounds = plan.source.agg(*[f(F.expr(sql)) for _, _, sql in ranges for f in (F.min, F.max)]).collect()[0]
        for i, (name, type_name, _) in enumerate(ranges):
            low, high = bounds[2 * i], bounds[2 * i + 1]
            if low is None:  # no non-null source key: no target row matches
                return None, True, []
            low_literal, high_literal = _literal(low, type_name), _literal(high, type_name)
            if low_literal is not None and high_literal is not None:
                key_column = S.Column((name,))
                found += [S.Compare(">=", key_column, low_literal), S.Compare("<=", key_column, high_literal)]
    return _and(found), False, ranges


def _holding_source_keys(
    plan: MergePlan, snapshot: Snapshot, files: pa.Table, keep: pa.Array, key: tuple[str, str, str]
) -> pa.Array:
    """``keep`` (over ``files``, all the snapshot's scan files) narrowed to files whose stats range holds a
    source key; files without stats stay."""
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
    keys = plan.source.select(F.expr(source_sql).alias("key")).where("key IS NOT NULL")
    ranges = F.broadcast(spark.createDataFrame(bounds))
    held = keys.join(ranges, (F.col("key") >= F.col("low")) & (F.col("key") <= F.col("high"))).select("file").distinct()
    hits = pa.array([r[0] for r in held.collect()], pa.int64())
    unknown = candidates.filter(pc.invert(known)).cast(pa.int64())
    wanted = pa.concat_arrays([hits, unknown])
    return pc.is_in(pa.array(range(len(keep)), pa.int64()), value_set=wanted)


def _not_matched_by_source_predicate(plan: MergePlan, probe: DataFrame) -> S.Predicate | None:
    """Rows a not-matched-by-source clause may act on: the OR of their conditions (None: any row)."""
    either: S.Predicate | None = None
    for clause in plan.not_matched_by_source:
        if clause.condition is None:
            return None
        condition = to_predicate(probe.filter(clause.condition)._jdf.queryExecution().analyzed().condition())
        if condition is None:
            return None
        either = condition if either is None else S.Or(either, condition)
    return either

"""Resolving a MERGE: the clauses as Spark Columns over the joined source and target rows.

Everything here is analysis, no job: conditions and expressions are resolved against a
probe (the source joined with an empty target of the table's schema), so a bad column
name fails before any data is read, as in delta-spark. Insert clauses may name the source
only, not-matched-by-source clauses the target only.

Both sides carry an alias: the user's (``DeltaTable.alias``, ``source.alias``), else a
private one, so that ``updateAll`` / ``insertAll`` and copied rows can name either side's
columns unambiguously. Each joined row gets an action code (``action_column``): the first
clause of its kind whose condition holds, else copy (a target row no clause changes) or
drop (a source row no insert takes); every output column is then one ``CASE`` on that
code (``output_columns``).

With schema evolution (``withSchemaEvolution()`` or
``spark.databricks.delta.schema.autoMerge.enabled``) and an ``updateAll`` / ``insertAll``
clause, the source's new columns and struct fields are added at the end; an ``updateAll``
keeps target columns the source lacks, an ``insertAll`` leaves them null. Struct values
are matched to the table's struct fields by name, at any depth. Generated columns a
clause does not set are computed from the row's new values; set ones are checked on write.
Identity columns an insert clause does not set are generated (``numbering``); no clause
may set a ``GENERATED ALWAYS`` one, and no update clause any identity column.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, LongType, StringType, StructField, StructType

from ....exceptions import DeltaAnalysisException
from ....kernel import Metadata, Protocol, Snapshot, metadata_change
from ....kernel.features import GENERATION_EXPRESSION
from ...conf import SCHEMA_AUTO_MERGE, get_bool
from ...expressions import Relation, resolve_condition
from ...expressions.tree import Ref, from_condition, walk
from ...read.parquet import ROW_INDEX_COLUMN, spark_schema, without_field_metadata
from ...write.identity import identity_columns, refuse_explicit_insert, refuse_update
from ...write.defaults import default_value, with_keywords_resolved
from ...write.schema import bare, delta_schema_json, new_table_schema
from .assignments import conform, resolve_assignments, struct_update
from .common import FILE_PATH_COLUMN

SOURCE_PRESENT = "__sparkdelta_merge_source_row"
TARGET_PRESENT = "__sparkdelta_merge_target_row"
ACTION = "__sparkdelta_merge_action"
# Action codes besides the clauses' own (1, 2, ... in clause order).
COPY = 0  # a target row written unchanged
DROP = -1  # a source row no insert clause takes
_SOURCE_ALIAS = "__sparkdelta_source"
_TARGET_ALIAS = "__sparkdelta_target"
_WHERE = {"matched": "UPDATE", "notMatched": "INSERT", "notMatchedBySource": "UPDATE"}


Expression = str | Column
ClauseKind = Literal["matched", "notMatched", "notMatchedBySource"]
ClauseAction = Literal["update", "delete", "insert"]


@dataclass(frozen=True)
class MergeClause:
    """One ``WHEN`` clause. ``assignments`` is None for ``updateAll`` / ``insertAll`` and for deletes."""

    kind: ClauseKind
    action: ClauseAction
    condition: Expression | None = None
    assignments: tuple[tuple[str, Expression], ...] | None = None

    @property
    def star(self) -> bool:
        """Whether this is ``updateAll`` / ``insertAll`` (every column from the source's column of that name)."""
        return self.action != "delete" and self.assignments is None


def quoted(*parts: str) -> str:
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def expression(value: str | Column) -> Column:
    return F.expr(value) if isinstance(value, str) else value


@dataclass(frozen=True)
class ResolvedClause:
    """A clause with its action code, condition and, for update and insert, each column it writes."""

    clause: MergeClause
    code: int
    condition: Column | None
    values: dict[str, Column] = field(default_factory=dict)
    # Generated columns this clause leaves to their generation expression.
    computed: frozenset[str] = frozenset()
    # Identity columns this (insert) clause leaves to be generated.
    numbered: frozenset[str] = frozenset()

    @property
    def deletes(self) -> bool:
        return self.clause.action == "delete"


@dataclass
class MergePlan:
    """The resolved merge: both sides' aliases, the table's schema after it, the clauses in order."""

    spark: SparkSession
    source: DataFrame  # aliased, with SOURCE_PRESENT
    source_alias: str
    target_alias: str
    condition: Column
    schema: StructType  # the table's columns after the merge
    original_columns: frozenset[str]  # lower-cased columns the table had before it
    matched: list[ResolvedClause]
    not_matched: list[ResolvedClause]
    not_matched_by_source: list[ResolvedClause]
    probe: DataFrame  # the source joined with an empty target: for analysis only
    metadata: Metadata | None = None  # the evolved schema's metadata, to commit
    protocol: Protocol | None = None  # an upgrade the evolved metadata needs
    parameters: dict[str, str] = field(default_factory=dict)
    # The target's columns as the clauses name them (with file path and row index).
    target_schema: StructType = field(default_factory=StructType)

    @property
    def clauses(self) -> list[ResolvedClause]:
        return [*self.matched, *self.not_matched, *self.not_matched_by_source]

    def codes(self, kind: str, action: str) -> list[int]:
        return [c.code for c in self.clauses if c.clause.kind == kind and c.clause.action == action]

    def target(self, rows: DataFrame) -> DataFrame:
        """Target rows (with or without file path and row index) as the clauses name them."""
        return rows.withColumn(TARGET_PRESENT, F.lit(True)).alias(self.target_alias)

    def target_column(self, name: str) -> Column:
        return F.col(quoted(self.target_alias, name))

    def old_value(self, field: StructField) -> Column:
        """A target row's value of ``field`` before the merge (null for a column the merge adds)."""
        if field.name.lower() in self.original_columns:
            return self.target_column(field.name)
        return F.lit(None).cast(field.dataType)

    def joined(self, target: DataFrame, how: str) -> DataFrame:
        return self.source.join(self.target(target), self.condition, how)


def first_clause(clauses: list[ResolvedClause], otherwise: int) -> Column:
    """The code of the first of ``clauses`` whose condition holds (NULL does not), else ``otherwise``."""
    result: Column | None = None
    for clause in clauses:
        condition = clause.condition if clause.condition is not None else F.lit(True)
        result = F.when(condition, clause.code) if result is None else result.when(condition, clause.code)
    return F.lit(otherwise) if result is None else result.otherwise(otherwise)


def action_column(plan: MergePlan) -> Column:
    """Each joined row's action code: the first clause of its kind whose condition holds, else COPY or DROP."""
    return (
        F.when(F.col(TARGET_PRESENT).isNull(), first_clause(plan.not_matched, DROP))
        .when(F.col(SOURCE_PRESENT).isNull(), first_clause(plan.not_matched_by_source, COPY))
        .otherwise(first_clause(plan.matched, COPY))
    )


def output_columns(plan: MergePlan, copies: bool = True) -> list[Column]:
    """The table's columns of each row after its action (``ACTION``): new values, or the old for a copy.

    Without ``copies`` the rows are source rows only (inserts), with no target columns to
    copy from, so only the insert clauses' values are used (the others may name the target).
    Generated columns a clause leaves out are computed afterwards (``with_generated``).
    """
    action = F.col(ACTION)
    clauses = plan.clauses if copies else plan.not_matched
    chosen = {clause.code: action == clause.code for clause in clauses}  # made once: each Column is JVM calls
    columns = []
    for target_field in plan.schema.fields:
        value: Column | None = None
        for clause in clauses:
            given = clause.values.get(target_field.name)
            if given is None:
                continue
            is_chosen = chosen[clause.code]
            value = F.when(is_chosen, given) if value is None else value.when(is_chosen, given)
        old = plan.old_value(target_field) if copies else F.lit(None).cast(target_field.dataType)
        columns.append((old if value is None else value.otherwise(old)).alias(target_field.name))
    return columns


def with_generated(plan: MergePlan, rows: DataFrame) -> DataFrame:
    """``rows`` (with ``ACTION``) with each generated column computed where the row's clause left it out."""
    for target_field in plan.schema.fields:
        if GENERATION_EXPRESSION not in target_field.metadata:
            continue
        codes = [c.code for c in plan.clauses if target_field.name in c.computed]
        if codes:
            computed = F.expr(str(target_field.metadata[GENERATION_EXPRESSION])).cast(target_field.dataType)
            rows = rows.withColumn(
                target_field.name, F.when(F.col(ACTION).isin(codes), computed).otherwise(F.col(quoted(target_field.name)))
            )
    return rows


def numbering(plan: MergePlan) -> dict[str, Column]:
    """Identity columns some insert clause leaves out, each with the rows (by ``ACTION``) that get
    generated values (``write/identity.py``); the same generator for every clause, so the
    values stay unique across them."""
    numbered = {}
    for target_field in plan.schema.fields:
        codes = [c.code for c in plan.clauses if target_field.name in c.numbered]
        if codes:
            numbered[target_field.name] = F.col(ACTION).isin(codes)
    return numbered


# --------------------------------------------------------------------------- resolution


def resolve(
    spark: SparkSession,
    snapshot: Snapshot,
    source: DataFrame,
    target_alias: str | None,
    condition: str | Column,
    clauses: Sequence[MergeClause],
    schema_evolution: bool,
) -> MergePlan:
    """Resolve the merge against ``snapshot``: aliases, evolved schema, clause columns, history parameters."""
    expressions = [condition, *(e for c in clauses for e in _clause_expressions(c))]
    source_alias = _source_alias(source, expressions, target_alias) or _SOURCE_ALIAS
    aliased = source.withColumn(SOURCE_PRESENT, F.lit(True)).alias(source_alias)
    talias = target_alias or _TARGET_ALIAS
    table_schema = without_field_metadata(spark_schema(snapshot))
    evolve = any(c.star for c in clauses) and (schema_evolution or get_bool(spark, SCHEMA_AUTO_MERGE))
    source_fields = source.schema
    metadata, protocol, schema = _evolution(snapshot, source_fields) if evolve else (None, None, spark_schema(snapshot))
    plan = MergePlan(
        spark,
        aliased,
        source_alias,
        talias,
        expression(condition),
        schema,
        frozenset(f.name.lower() for f in table_schema.fields),
        [],
        [],
        [],
        aliased,
        metadata,
        protocol,
    )
    plan.target_schema = StructType(
        [*table_schema.fields, StructField(FILE_PATH_COLUMN, StringType()), StructField(ROW_INDEX_COLUMN, LongType())]
    )
    probe_target = spark.createDataFrame([], plan.target_schema)
    target_side = plan.target(probe_target)
    probe = plan.probe = plan.joined(probe_target, "full")
    sides = {"matched": probe, "notMatched": aliased, "notMatchedBySource": target_side}
    resolved: list[ResolvedClause] = []
    for code, clause in enumerate(clauses, start=1):
        resolved.append(_resolve_clause(plan, clause, code, sides[clause.kind], source_fields, evolve))
    plan.matched = [c for c in resolved if c.clause.kind == "matched"]
    plan.not_matched = [c for c in resolved if c.clause.kind == "notMatched"]
    plan.not_matched_by_source = [c for c in resolved if c.clause.kind == "notMatchedBySource"]
    plan.parameters = _parameters(plan)
    return plan


def _clause_expressions(clause: MergeClause) -> list[Expression]:
    values = [value for _, value in clause.assignments or ()]
    return values if clause.condition is None else [clause.condition, *values]


def _source_alias(source: DataFrame, expressions: list[Expression], target_alias: str | None) -> str | None:
    """The alias of the source's columns (``df.alias("s")``, a view's name) that the merge's
    expressions name them by, if any.

    Each qualifier the expressions use (``s`` of ``s.id``) that is not the target's alias
    nor a source column (a struct) is tried on the source itself (``s.*``): analysis, no job.
    """
    columns = {c.lower() for c in source.columns}
    tried = {target_alias.lower()} if target_alias else set()
    for value in expressions:
        for node in walk(from_condition(value)):
            if not isinstance(node, Ref) or len(node.parts) < 2 or node.parts[0].lower() in columns | tried:
                continue
            qualifier = node.parts[0]
            tried.add(qualifier.lower())
            try:
                source.select(F.col(quoted(qualifier) + ".*")).columns  # noqa: B018 - analysis only
            except AnalysisException:
                continue
            return qualifier
    return None


def _evolution(snapshot: Snapshot, source: StructType) -> tuple[Metadata | None, Protocol | None, StructType]:
    """The metadata (and protocol upgrade) when the source adds columns or struct fields; the schema after."""
    current = spark_schema(snapshot)
    evolved = _evolved(current, source)
    if bare(evolved) == bare(current) and [f.name for f in evolved.fields] == [f.name for f in current.fields]:
        return None, None, current
    changed = replace(snapshot.metadata, schema_string=delta_schema_json(evolved))
    prepared, protocol = metadata_change.prepare(changed, snapshot.metadata, snapshot.protocol)
    upgrade = None if protocol is snapshot.protocol else protocol
    return prepared, upgrade, StructType.fromJson(prepared.schema.to_json())


def _evolved(target: StructType, source: StructType) -> StructType:
    """``target`` with ``source``'s new columns at the end, and new struct fields inside structs of both."""
    incoming = {f.name.lower(): f for f in source.fields}
    fields = []
    for target_field in target.fields:
        given = incoming.pop(target_field.name.lower(), None)
        if given is not None and isinstance(target_field.dataType, StructType) and isinstance(given.dataType, StructType):
            target_field = StructField(
                target_field.name, _evolved(target_field.dataType, given.dataType), target_field.nullable, target_field.metadata
            )
        fields.append(target_field)
    added = new_table_schema(StructType([f for f in source.fields if f.name.lower() in incoming]))
    return StructType(fields + list(added.fields))


def _resolve_clause(
    plan: MergePlan, clause: MergeClause, code: int, side: DataFrame, source: StructType, evolve: bool
) -> ResolvedClause:
    where = f"{_WHERE[clause.kind]} clause"
    condition = expression(clause.condition) if clause.condition is not None else None
    if condition is not None:
        side.select(condition)  # resolves (or fails) before any job
    if clause.action == "delete":
        return ResolvedClause(clause, code, condition)
    if clause.star:
        values, computed = _star_values(plan, clause, source, evolve, where)
    else:
        values, computed = _explicit_values(plan, clause, side, where)
    # delta-spark: no clause may set an identity column's value but an insert into a BY DEFAULT one;
    # an insert that leaves one out has it generated.
    given = [name for name in values if name not in computed]
    if clause.action == "update":
        refuse_update(plan.schema, given)
    else:
        refuse_explicit_insert(plan.schema, given)
    numbered = frozenset(name for name in computed if name.lower() in _identity_names(plan.schema))
    return ResolvedClause(clause, code, condition, values, frozenset(computed) - numbered, numbered)


def _identity_names(schema: StructType) -> set[str]:
    return {info.name.lower() for info in identity_columns(schema)}


def _star_values(
    plan: MergePlan, clause: MergeClause, source: StructType, evolve: bool, where: str
) -> tuple[dict[str, Column], set[str]]:
    """``updateAll`` / ``insertAll``: each table column from the source column of that name."""
    by_name = {f.name.lower(): f for f in source.fields}
    identity = _identity_names(plan.schema)
    values: dict[str, Column] = {}
    computed: set[str] = set()
    for target_field in plan.schema.fields:
        given = by_name.get(target_field.name.lower())
        if given is not None:
            column = F.col(quoted(plan.source_alias, given.name))
            values[target_field.name] = conform(column, given.dataType, target_field.dataType, target_field.name, evolve)
        elif GENERATION_EXPRESSION in target_field.metadata or (
            target_field.name.lower() in identity and clause.action == "insert" and evolve
        ):
            computed.add(target_field.name)
            values[target_field.name] = F.lit(None).cast(target_field.dataType)
        elif evolve:
            if clause.action == "insert":
                values[target_field.name] = default_value(target_field)
        else:
            columns = ", ".join(quoted(plan.source_alias, f.name) for f in source.fields)
            raise DeltaAnalysisException(
                f"Cannot resolve {quoted(plan.target_alias, target_field.name)} in "
                f"{where} given columns {columns}. The source lacks this column: name it in whenMatchedUpdate / "
                "whenNotMatchedInsert, or enable schema evolution (withSchemaEvolution()).",
                errorClass="DELTA_MERGE_UNRESOLVED_EXPRESSION",
            )
    return values, computed


def _explicit_values(plan: MergePlan, clause: MergeClause, side: DataFrame, where: str) -> tuple[dict[str, Column], set[str]]:
    """``set`` / ``values``: the named columns (nested fields by dotted path, ``DEFAULT`` their
    defaults); an insert's others get their defaults, else null."""
    assert clause.assignments is not None
    keyed = [(key, expression(value)) for key, value in with_keywords_resolved(clause.assignments, plan.schema)]
    assignments = resolve_assignments(keyed, plan.schema, plan.target_alias, where)
    nested_insert = next((a for a in assignments if a.path and clause.action == "insert"), None)
    if nested_insert is not None:
        raise DeltaAnalysisException(
            f"Nested field {nested_insert.key} is not supported in the {where} (assign the whole struct)"
        )
    types = side.select(*[a.value for a in assignments]).schema.fields
    values: dict[str, Column] = {}
    nested: dict[str, list[tuple[tuple[str, ...], Column, DataType]]] = {}
    for assignment, typed in zip(assignments, types, strict=True):
        top = assignment.column
        if assignment.path:
            nested.setdefault(top.name, []).append((assignment.path, assignment.value, typed.dataType))
        else:
            values[top.name] = conform(assignment.value, typed.dataType, top.dataType, top.name, False)
    targets = {f.name: f for f in plan.schema.fields}
    for name, assigned in nested.items():
        values[name] = struct_update(plan.old_value(targets[name]), targets[name], assigned)
    computed = set()
    identity = _identity_names(plan.schema)
    for target_field in plan.schema.fields:
        if target_field.name in values:
            continue
        numbered = clause.action == "insert" and target_field.name.lower() in identity
        if GENERATION_EXPRESSION in target_field.metadata or numbered:
            computed.add(target_field.name)
            values[target_field.name] = F.lit(None).cast(target_field.dataType)
        elif clause.action == "insert":
            values[target_field.name] = default_value(target_field)
    return values, computed


# --------------------------------------------------------------------------- history


def _parameters(plan: MergePlan) -> dict[str, str]:
    """operationParameters as delta-spark writes them: the predicate and each kind's clauses, as JSON."""

    relations = [Relation(plan.source.schema, plan.source_alias), Relation(plan.target_schema, plan.target_alias)]

    def sql(condition: Column) -> str:
        text = resolve_condition(plan.spark, condition, relations).sql()
        if text is None:  # a shape not printed as Catalyst would: the condition as given
            return str(condition)
        for alias in (_SOURCE_ALIAS, _TARGET_ALIAS):
            text = text.replace(f"{alias}.", "").replace(f"`{alias}`.", "")
        return text

    def predicates(clauses: list[ResolvedClause]) -> str:
        entries = []
        for clause in clauses:
            entry = {"predicate": sql(clause.condition)} if clause.condition is not None else {}
            entries.append({**entry, "actionType": clause.clause.action})
        return json.dumps(entries, separators=(",", ":"))

    return {
        "predicate": json.dumps([sql(plan.condition)]),
        "matchedPredicates": predicates(plan.matched),
        "notMatchedPredicates": predicates(plan.not_matched),
        "notMatchedBySourcePredicates": predicates(plan.not_matched_by_source),
    }

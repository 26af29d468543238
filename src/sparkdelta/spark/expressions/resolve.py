"""Names in the neutral tree resolved against schemas, as Spark's analyzer resolves them.

A name is tried first as ``alias.column[.field...]`` against each relation carrying an
alias, then as ``column[.field...]``; names and aliases compare case-insensitively
unless ``spark.sql.caseSensitive`` is on. A name with no match, or more than one, stays
an unresolved ``Ref``, and every analysis above it answers "unknown".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql.types import BooleanType, DataType, DecimalType, NumericType, StructType

from .spark_types import comparison_type
from .tree import Call, Cast, Col, Expr, Lit, Opaque, Ref, walk


@dataclass(frozen=True)
class Relation:
    """Columns a condition may name, and the alias they carry (None: none)."""

    schema: StructType
    alias: str | None = None


def case_sensitive(spark: SparkSession) -> bool:
    """``spark.sql.caseSensitive``, read through ``spark.conf`` (both kinds of session have it)."""
    return (spark.conf.get("spark.sql.caseSensitive", "false") or "false").strip().lower() == "true"


def ansi(spark: SparkSession) -> bool:
    """``spark.sql.ansi.enabled`` (Spark 4's default: on): outside it, the analyzer's implicit
    casts between text and other types differ from the ones ``spark_types`` models."""
    return (spark.conf.get("spark.sql.ansi.enabled", "true") or "true").strip().lower() == "true"


def _same(a: str, b: str, sensitive: bool) -> bool:
    return a == b if sensitive else a.lower() == b.lower()


def _path(schema: StructType, parts: Sequence[str], sensitive: bool) -> tuple[tuple[str, ...], DataType] | None:
    """The schema's spelling and type of a column with struct fields after it."""
    current: DataType = schema
    path: list[str] = []
    for part in parts:
        if not isinstance(current, StructType):
            return None
        found = [f for f in current.fields if _same(f.name, part, sensitive)]
        if len(found) != 1:
            return None
        path.append(found[0].name)
        current = found[0].dataType
    return tuple(path), current


def _column(parts: tuple[str, ...], relations: Sequence[Relation], sensitive: bool) -> Col | None:
    for qualified in (True, False):
        found: list[Col] = []
        for relation in relations:
            if qualified:
                if relation.alias is None or len(parts) < 2 or not _same(parts[0], relation.alias, sensitive):
                    continue
                resolved = _path(relation.schema, parts[1:], sensitive)
            else:
                resolved = _path(relation.schema, parts, sensitive)
            if resolved is not None:
                found.append(Col(resolved[0], resolved[1], relation.alias, parts[1:] if qualified else parts))
        if found:
            return found[0] if len(found) == 1 else None
    return None


def resolve(expr: Expr, relations: Sequence[Relation], sensitive: bool) -> Expr:
    """``expr`` with each name it can resolve as a ``Col``."""
    if isinstance(expr, Ref):
        column = _column(expr.parts, relations, sensitive)
        return expr if column is None else column
    if isinstance(expr, Call):
        return Call(expr.name, tuple(resolve(a, relations, sensitive) for a in expr.args))
    if isinstance(expr, Cast):
        return Cast(resolve(expr.child, relations, sensitive), expr.type, expr.literal)
    if isinstance(expr, Opaque):
        return Opaque(expr.kind, tuple(resolve(a, relations, sensitive) for a in expr.args))
    return expr


def resolved(expr: Expr) -> bool:
    """Whether every name resolved and nothing is opaque."""
    return not any(isinstance(n, (Ref, Opaque)) for n in walk(expr))


def references(expr: Expr) -> list[Col] | None:
    """The columns a resolved ``expr`` reads, in order of first appearance; None when unknown."""
    if not resolved(expr):
        return None
    seen: list[Col] = []
    for node in walk(expr):
        if isinstance(node, Col) and node not in seen:
            seen.append(node)
    return seen


_PREDICATES = frozenset(
    "= <=> < <= > >= and or not isnull isnotnull in like ilike rlike startswith endswith contains isnan between".split()
)


def type_of(expr: Expr) -> DataType | None:
    """The type of a resolved expression, where the tree knows it."""
    if isinstance(expr, (Col, Lit, Cast)):
        return expr.type
    if isinstance(expr, Call):
        if expr.name in _PREDICATES:
            return BooleanType()
        if expr.name in ("+", "-", "*") and len(expr.args) == 2:
            left, right = (type_of(a) for a in expr.args)
            if isinstance(left, NumericType) and left == right and not isinstance(left, DecimalType):
                return left
        if expr.name == "negative" and len(expr.args) == 1:
            return type_of(expr.args[0])
    return None


def maybe_common(a: DataType | None, b: DataType | None) -> DataType | None:
    return None if a is None or b is None else comparison_type(a, b)

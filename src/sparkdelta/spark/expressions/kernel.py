"""Resolved conditions as kernel skipping predicates (``kernel/skipping.py``).

Only shapes whose meaning is certain are translated: a column (possibly under a cast that
keeps every value) compared with a literal whose value, after Spark's implicit casts, is
computed exactly here. Anything else is "unknown" (None), which keeps files: a file is
never dropped on a guess.
"""

from __future__ import annotations

from datetime import tzinfo

from pyspark.sql.types import DataType, NullType, StringType

from ...kernel import skipping as S
from .spark_types import Uncertain, cast_value, comparison_type, exact_widening
from .tree import Call, Cast, Col, Expr, Lit

_COMPARISONS = {"=": "=", "<=>": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _collated(data_type: DataType) -> bool:
    """A string type compared under a collation other than binary (``STRING COLLATE UTF8_LCASE``):
    its ``=``, ``<`` and LIKE do not follow the stats' byte order."""
    return isinstance(data_type, StringType) and getattr(data_type, "collation", "UTF8_BINARY") != "UTF8_BINARY"


def _column(expr: Expr) -> tuple[Col, DataType] | None:
    """A column, and the type it is compared in (its own, or a cast of it that keeps every value)."""
    if isinstance(expr, Col):
        return expr, expr.type
    if isinstance(expr, Cast) and isinstance(expr.child, Col) and exact_widening(expr.child.type, expr.type):
        return expr.child, expr.type
    return None


def _literal(expr: Expr, time_zone: tzinfo) -> Lit | None:
    """A literal, explicit casts of literals computed."""
    if isinstance(expr, Lit):
        return expr
    if isinstance(expr, Cast):
        inner = _literal(expr.child, time_zone)
        if inner is None:
            return None
        try:
            return Lit(cast_value(inner.value, inner.type, expr.type, time_zone), expr.type)
        except Uncertain:
            return None
    return None


def _value(column: tuple[Col, DataType], literal: Lit, time_zone: tzinfo) -> S.Literal | None:
    """The literal's value where the comparison meets the column: both cast to their common type."""
    col, seen_as = column
    if literal.value is None or isinstance(literal.type, NullType) or _collated(col.type) or _collated(seen_as):
        return None
    common = comparison_type(seen_as, literal.type)
    if common is None or not exact_widening(col.type, common):
        return None
    try:
        return S.Literal(cast_value(literal.value, literal.type, common, time_zone))
    except Uncertain:
        return None


def _comparison(op: str, left: Expr, right: Expr, time_zone: tzinfo) -> S.Predicate | None:
    column, literal = _column(left), _literal(right, time_zone)
    if column is None:
        column, literal, op = _column(right), _literal(left, time_zone), S.flip(op)
    if column is None or literal is None:
        return None
    value = _value(column, literal, time_zone)
    return None if value is None else S.Compare(op, S.Column(column[0].path), value)


def to_predicate(expr: Expr, time_zone: tzinfo, exact: bool = False) -> S.Predicate | None:  # noqa: C901
    """A kernel predicate for a resolved condition, or None when none is sound.

    The result may be weaker than ``expr`` (an AND keeps the side it can translate), which
    only keeps more files. Under NOT a weaker inner predicate would make a stronger outer
    one and drop files, so there the translation must be ``exact``.
    """
    if not isinstance(expr, Call):
        return None
    name, args = expr.name, expr.args
    if name in ("and", "or") and len(args) == 2:
        left, right = (to_predicate(a, time_zone, exact) for a in args)
        if left is None or right is None:
            return None if name == "or" or exact else left or right
        return S.Or(left, right) if name == "or" else S.And(left, right)
    if name == "not" and len(args) == 1:
        inner = to_predicate(args[0], time_zone, exact=True)
        return None if inner is None else S.Not(inner)
    if name == "<=>" and exact:
        return None  # NOT (a <=> 1) holds for NULLs, NOT (a = 1) does not
    if name in _COMPARISONS and len(args) == 2:
        return _comparison(_COMPARISONS[name], args[0], args[1], time_zone)
    if name == "in" and len(args) >= 2:
        column = _column(args[0])
        if column is None:
            return None
        values = []
        for arg in args[1:]:
            literal = _literal(arg, time_zone)
            value = None if literal is None else _value(column, literal, time_zone)
            if value is None:
                return None
            values.append(value)
        return S.In(S.Column(column[0].path), tuple(values))
    if name == "between" and len(args) == 3:  # x BETWEEN lower AND upper: lower <= x AND x <= upper
        lower = _comparison(">=", args[0], args[1], time_zone)
        upper = _comparison("<=", args[0], args[2], time_zone)
        return None if lower is None or upper is None else S.And(lower, upper)
    if name in ("isnull", "isnotnull") and len(args) == 1:
        column = _column(args[0])
        return None if column is None else S.IsNull(S.Column(column[0].path), negated=(name == "isnotnull"))
    if name in ("like", "startswith") and len(args) == 2:
        return _prefix(name, args[0], args[1])
    return None


def _prefix(name: str, subject: Expr, pattern: Expr) -> S.Predicate | None:
    """``s LIKE 'abc%'`` or ``startswith(s, 'abc')`` on a string column."""
    if not (isinstance(subject, Col) and isinstance(subject.type, StringType)) or _collated(subject.type):
        return None
    if not (isinstance(pattern, Lit) and isinstance(pattern.value, str)):
        return None
    prefix = pattern.value
    if name == "like":
        if not prefix.endswith("%") or any(ch in prefix[:-1] for ch in "%_\\"):
            return None
        prefix = prefix[:-1]
    return S.StartsWith(S.Column(subject.path), prefix)

"""A resolved condition's SQL as Catalyst prints the analyzed expression (``Expression.sql``).

delta-spark records DELETE, UPDATE and MERGE conditions in ``operationParameters`` this
way: ``id = 5`` on a bigint column becomes ``(id = CAST(5 AS BIGINT))``, the analyzer's
implicit casts shown. ``analyzed_sql`` prints the tree with those casts added where a
comparison's sides differ in type, literals in Catalyst's spelling (``5L``, ``1.50BD``,
``DATE '2024-01-02'``), attributes with the alias of their relation. It answers None for
what it cannot print as Spark would (an unresolved name, an opaque node).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from datetime import tzinfo
from decimal import Decimal

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    IntegralType,
    LongType,
    NullType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from .resolve import type_of
from .spark_types import Uncertain, cast_value, comparison_type
from .tree import Call, Cast, Col, Expr, Lit

_OPERATORS = {
    "=": "=",
    "<=>": "<=>",
    "<": "<",
    "<=": "<=",
    ">": ">",
    ">=": ">=",
    "and": "AND",
    "or": "OR",
    "+": "+",
    "-": "-",
    "*": "*",
    "/": "/",
    "%": "%",
}
_COMPARISONS = frozenset("= <=> < <= > >=".split())
_PLAIN = re.compile(r"[a-zA-Z0-9_]+")


def quote_if_needed(part: str) -> str:
    """Catalyst's ``quoteIfNeeded``: a name is printed bare when it is word characters, not all digits."""
    if _PLAIN.fullmatch(part) and not part.isdigit():
        return part
    return "`" + part.replace("`", "``") + "`"


def type_sql(data_type: DataType) -> str:
    """``DataType.sql``: ``BIGINT``, ``DECIMAL(10,2)``, ``TIMESTAMP_NTZ``."""
    return data_type.simpleString().upper()


def _escape(text: str) -> str:
    return "".join({"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, ch) for ch in text)


def _fraction(moment: dt.datetime) -> str:
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    return text + ("." + f"{moment.microsecond:06d}".rstrip("0") if moment.microsecond else "")


def literal_sql(literal: Lit, time_zone: tzinfo) -> str | None:  # noqa: C901 - one case per type
    """``Literal.sql`` for the literal types conditions hold."""
    value, data_type = literal.value, literal.type
    if value is None:
        return "NULL" if isinstance(data_type, NullType) else f"CAST(NULL AS {type_sql(data_type)})"
    if isinstance(data_type, BooleanType):
        return "true" if value else "false"
    if isinstance(data_type, IntegerType):
        return str(value)
    suffixes: dict[type[DataType], str] = {LongType: "L", ShortType: "S", ByteType: "Y"}
    if type(data_type) in suffixes:
        return f"{value}{suffixes[type(data_type)]}"
    if isinstance(data_type, (DoubleType, FloatType)):
        if math.isnan(value) or math.isinf(value):
            special = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            return f"CAST('{special}' AS {type_sql(data_type)})"
        return f"{value!r}D" if isinstance(data_type, DoubleType) else f"CAST({value!r} AS FLOAT)"
    if isinstance(data_type, DecimalType) and isinstance(value, Decimal):
        return f"{value}BD"
    if isinstance(data_type, StringType):
        return f"'{_escape(str(value))}'"
    if isinstance(data_type, DateType):
        return f"DATE '{value.isoformat()}'"
    if isinstance(data_type, TimestampType):
        local = value.astimezone(time_zone)
        return f"TIMESTAMP '{_fraction(local)}'"
    if isinstance(data_type, TimestampNTZType):
        return f"TIMESTAMP_NTZ '{_fraction(value)}'"
    if isinstance(data_type, BinaryType):
        return "X'" + bytes(value).hex().upper() + "'"
    return None


def _cast_to(expr: Expr, target: DataType | None) -> Expr:
    if target is None or type_of(expr) in (None, target):
        return expr
    return Cast(expr, target)


def _decimal_literal(expr: Expr, types: list[DataType | None]) -> Expr:
    """An integer literal meeting a decimal as the analyzer sees it: a decimal of its own digits."""
    if isinstance(expr, Lit) and isinstance(expr.type, IntegralType) and any(isinstance(t, DecimalType) for t in types):
        if isinstance(expr.value, int):
            return Cast(expr, DecimalType(len(str(abs(expr.value))), 0))
    return expr


def _coerced(expr: Call) -> Call:
    """A comparison or IN with the analyzer's implicit casts to the sides' common type: a
    comparison casts the sides that differ from it, IN casts every side once one differs."""
    args = [_decimal_literal(a, [type_of(b) for b in expr.args]) for a in expr.args]
    types = [type_of(a) for a in args]
    if any(t is None for t in types):
        return expr
    common: DataType | None = types[0]
    for t in types[1:]:
        common = None if common is None or t is None else comparison_type(common, t)
    if common is None:
        return expr
    if expr.name == "in":
        if all(t == common for t in types):
            return Call(expr.name, tuple(args))
        return Call(expr.name, tuple(Cast(a, common) for a in args))
    return Call(expr.name, tuple(_cast_to(a, common) for a in args))


def _legacy_text_coercion(expr: Call) -> bool:
    """Whether a comparison or IN sets text against another type: outside ANSI mode the
    analyzer casts those otherwise (``i IN ('1', 2)`` compares as text), so the ANSI casts
    printed here would change which rows match (the SQL may be evaluated: ``overwrite``)."""
    texts = [isinstance(t, StringType) for t in map(type_of, expr.args) if t is not None and not isinstance(t, NullType)]
    return any(texts) and not all(texts)


def analyzed_sql(expr: Expr, time_zone: tzinfo, ansi: bool = True) -> str | None:  # noqa: C901 - one case per node kind
    """``expr`` (resolved) printed as Catalyst prints it after analysis (``ansi``: under
    ``spark.sql.ansi.enabled``), or None."""

    def sql(e: Expr) -> str | None:
        if isinstance(e, Col):
            # GetStructField prints its field quoted always
            path = e.spelled or e.path
            attribute = [quote_if_needed(p) for p in ([e.qualifier] if e.qualifier else []) + [path[0]]]
            return ".".join(attribute + ["`" + p.replace("`", "``") + "`" for p in path[1:]])
        if isinstance(e, Lit):
            return literal_sql(e, time_zone)
        if isinstance(e, Cast) and e.literal and isinstance(e.child, Lit):
            try:
                value = cast_value(e.child.value, e.child.type, e.type, time_zone)
                return literal_sql(Lit(value, e.type), time_zone)
            except Uncertain:
                pass
        if isinstance(e, Cast):
            inner = sql(e.child)
            return None if inner is None else f"CAST({inner} AS {type_sql(e.type)})"
        if not isinstance(e, Call):
            return None
        if e.name in _COMPARISONS or e.name == "in":
            if not ansi and _legacy_text_coercion(e):
                return None
            e = _coerced(e)
        args = [sql(a) for a in e.args]
        if any(a is None for a in args):
            return None
        if e.name in _OPERATORS and len(args) == 2:
            return f"({args[0]} {_OPERATORS[e.name]} {args[1]})"
        if e.name == "not" and len(args) == 1:
            return f"(NOT {args[0]})"
        if e.name in ("isnull", "isnotnull") and len(args) == 1:
            return f"({args[0]} IS {'NOT ' if e.name == 'isnotnull' else ''}NULL)"
        if e.name == "in" and args:
            return f"({args[0]} IN ({', '.join(str(a) for a in args[1:])}))"
        if e.name == "like" and len(args) == 2:
            return f"{args[0]} LIKE {args[1]}"
        if e.name == "negative" and len(args) == 1:
            return f"(- {args[0]})"
        return f"{e.name}({', '.join(str(a) for a in args)})"

    return sql(expr)

"""A neutral expression tree for Spark conditions, built in Python from SQL text or a Column.

sparkdelta reasons about filter, DML and MERGE conditions (data skipping, the columns a
condition reads, the SQL text delta-spark records in the history) without asking Spark's
JVM, which a Spark Connect client has no handle on. Every input becomes this one tree:

- SQL text through sqlglot's Spark dialect (``from_sql``);
- a Spark Connect ``Column`` through its pure-Python expression tree (``col._expr``);
- a classic ``Column``, whose expression lives only in the JVM, through the one adapter
  in ``classic.py``, which walks Spark's own unresolved ``ColumnNode`` tree.

The tree is unresolved: ``Ref`` names are resolved against a schema by ``resolve.py``.
What it cannot model becomes ``Opaque`` (a subquery, a lambda, a user-defined function's
body), so that every analysis downstream answers "unknown" rather than guessing.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import sqlglot
from pyspark.sql import Column
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
    LongType,
    NullType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)
from sqlglot import exp

from ...exceptions import DeltaAnalysisException
from ..identifiers import attribute_parts


@dataclass(frozen=True)
class Ref:
    """An unresolved name: a column, maybe qualified, maybe with struct fields after it."""

    parts: tuple[str, ...]


@dataclass(frozen=True)
class Col:
    """A resolved column: its path in the schema (names as the schema spells them), its type,
    the alias of its relation, if any, and its path as the condition spells it (Catalyst
    prints that spelling)."""

    path: tuple[str, ...]
    type: DataType
    qualifier: str | None = None
    spelled: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lit:
    """A typed literal. Values: int, float, Decimal, str, bool, bytes, ``date``, an aware UTC
    ``datetime`` for TIMESTAMP, a naive one for TIMESTAMP_NTZ, or None."""

    value: Any
    type: DataType


@dataclass(frozen=True)
class Call:
    """An operator or function call, by canonical lower-case name (``=``, ``and``, ``isnull``, ``upper``)."""

    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Cast:
    """A cast; ``literal`` when it is a typed literal's syntax (``DATE '2024-01-02'``)."""

    child: Expr
    type: DataType
    literal: bool = False


@dataclass(frozen=True)
class Opaque:
    """What the tree does not model; ``kind`` says what (``subquery``, ``udf``, ``lambda``...)."""

    kind: str
    args: tuple[Expr, ...] = ()


Expr = Ref | Col | Lit | Call | Cast | Opaque

# Operator spellings of the Column APIs (Connect's and the JVM's), as canonical names.
_ALIASES = {
    "==": "=",
    "!": "not",
    "isnull": "isnull",
    "isnotnull": "isnotnull",
    "startswith": "startswith",
    "starts_with": "startswith",
    "negative": "negative",
}
# Functions whose result differs from call to call, as Spark marks them (``Nondeterministic``).
NONDETERMINISTIC = frozenset(
    "rand randn random uuid shuffle monotonically_increasing_id spark_partition_id input_file_name "
    "input_file_block_start input_file_block_length randstr uniform try_reflect reflect java_method".split()
)


def call(name: str, *args: Expr) -> Call:
    """A call by any spelling of its name."""
    lowered = name.lower()
    return Call(_ALIASES.get(lowered, lowered), args)


def children(expr: Expr) -> tuple[Expr, ...]:
    if isinstance(expr, Call):
        return expr.args
    if isinstance(expr, Cast):
        return (expr.child,)
    if isinstance(expr, Opaque):
        return expr.args
    return ()


def walk(expr: Expr) -> list[Expr]:
    """``expr`` and every node below it, parents first."""
    nodes = [expr]
    for child in children(expr):
        nodes.extend(walk(child))
    return nodes


def conjuncts(expr: Expr) -> list[Expr]:
    """The parts of a chain of ANDs."""
    if isinstance(expr, Call) and expr.name == "and":
        return [part for arg in expr.args for part in conjuncts(arg)]
    return [expr]


def deterministic(expr: Expr) -> bool | None:
    """Whether ``expr`` gives the same value for the same row: False when it calls a function
    Spark marks nondeterministic, None when it holds something the tree cannot see into."""
    nodes = walk(expr)
    if any(isinstance(n, Call) and n.name in NONDETERMINISTIC for n in nodes):
        return False
    return None if any(isinstance(n, Opaque) for n in nodes) else True


# --------------------------------------------------------------------------- literals


def decimal_type(value: Decimal) -> DecimalType:
    """A decimal literal's type as the JVM gives a ``BigDecimal``: its own precision and scale."""
    sign, digits, exponent = value.as_tuple()
    scale = max(0, -int(exponent))
    precision = max(len(digits) + max(0, int(exponent)), scale, 1)
    return DecimalType(min(precision, 38), min(scale, 38))


def integer_literal(value: int) -> Lit:
    """An integer literal as Spark types it: INT if it fits, else BIGINT, else DECIMAL."""
    if -(2**31) <= value < 2**31:
        return Lit(value, IntegerType())
    if -(2**63) <= value < 2**63:
        return Lit(value, LongType())
    return Lit(Decimal(value), decimal_type(Decimal(value)))


def python_literal(value: Any) -> Expr:
    """A Python value as pyspark's ``lit`` types it (a naive datetime is the local time)."""
    if value is None:
        return Lit(None, NullType())
    if isinstance(value, bool):
        return Lit(value, BooleanType())
    if isinstance(value, int):
        return integer_literal(value)
    if isinstance(value, float):
        return Lit(value, DoubleType())
    if isinstance(value, str):
        return Lit(value, StringType())
    if isinstance(value, Decimal):
        return Lit(value, decimal_type(value))
    if isinstance(value, dt.datetime):
        return timestamp_literal(TimestampType().toInternal(value))
    if isinstance(value, dt.date):
        return Lit(value, DateType())
    if isinstance(value, (bytes, bytearray)):
        return Lit(bytes(value), BinaryType())
    return Opaque("literal")


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def timestamp_literal(micros: int) -> Lit:
    """A TIMESTAMP literal from microseconds since the epoch."""
    return Lit(_EPOCH + dt.timedelta(microseconds=micros), TimestampType())


def typed_literal(value: Any, data_type: DataType) -> Expr:
    """A literal whose type a Column API states (Connect's ``LiteralExpression``, the JVM's ``typedLit``)."""
    if value is None:
        return Lit(None, data_type)
    # Connect's LiteralExpression holds dates as epoch days and timestamps as epoch microseconds.
    if isinstance(value, int) and isinstance(data_type, DateType):
        return Lit(dt.date(1970, 1, 1) + dt.timedelta(days=value), data_type)
    if isinstance(value, int) and isinstance(data_type, TimestampType):
        return timestamp_literal(value)
    if isinstance(value, int) and isinstance(data_type, TimestampNTZType):
        return Lit(dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value), data_type)
    if isinstance(data_type, TimestampType) and isinstance(value, dt.datetime):
        return timestamp_literal(TimestampType().toInternal(value))
    if isinstance(data_type, TimestampNTZType) and isinstance(value, dt.datetime):
        return Lit(value.replace(tzinfo=None), data_type)
    if isinstance(data_type, DecimalType) and isinstance(value, Decimal):
        return Lit(value, decimal_type(value))
    simple = (BooleanType, ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, StringType, DateType)
    if isinstance(data_type, simple) or isinstance(data_type, BinaryType):
        return Lit(value, data_type)
    return Opaque("literal")


# --------------------------------------------------------------------------- SQL text

_SQLGLOT_TYPES: dict[Any, DataType] = {
    exp.DataType.Type.BOOLEAN: BooleanType(),
    exp.DataType.Type.TINYINT: ByteType(),
    exp.DataType.Type.SMALLINT: ShortType(),
    exp.DataType.Type.INT: IntegerType(),
    exp.DataType.Type.BIGINT: LongType(),
    exp.DataType.Type.FLOAT: FloatType(),
    exp.DataType.Type.DOUBLE: DoubleType(),
    exp.DataType.Type.TEXT: StringType(),
    exp.DataType.Type.VARCHAR: StringType(),
    exp.DataType.Type.DATE: DateType(),
    exp.DataType.Type.TIMESTAMP: TimestampType(),
    exp.DataType.Type.TIMESTAMPNTZ: TimestampNTZType(),
    exp.DataType.Type.TIMESTAMPTZ: TimestampType(),
    exp.DataType.Type.TIMESTAMPLTZ: TimestampType(),
    exp.DataType.Type.BINARY: BinaryType(),
}
_BINARY: dict[type[exp.Expression], str] = {
    exp.EQ: "=",
    exp.NullSafeEQ: "<=>",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.And: "and",
    exp.Or: "or",
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
    exp.Like: "like",
    exp.ILike: "ilike",
}


def sql_type(node: exp.DataType) -> DataType | None:
    """A sqlglot data type as Spark's, for the scalar types conditions cast to."""
    if node.this == exp.DataType.Type.DECIMAL:
        params = [int(p.name) for p in node.expressions]
        return DecimalType(*params) if params else DecimalType(10, 0)
    return _SQLGLOT_TYPES.get(node.this)


def from_sql(text: str) -> Expr:
    """SQL text (a condition or expression) as the tree; ``Opaque`` where it does not parse."""
    try:
        parsed: exp.Expression = sqlglot.parse_one(text, read="spark")  # type: ignore[assignment]
    except sqlglot.errors.SqlglotError:
        return Opaque("unparsed")
    tree = _from_sqlglot(parsed)
    unparsed = any(isinstance(n, Opaque) and n.kind == "unparsed" for n in walk(tree))
    return Opaque("unparsed") if unparsed else tree


def _number(text: str) -> Expr:
    if "e" in text.lower():
        number = float(text)
        return Opaque("unparsed") if math.isinf(number) else Lit(number, DoubleType())
    if "." in text:
        decimal = Decimal(text)
        return Lit(decimal, decimal_type(decimal))
    return integer_literal(int(text))


_SUFFIX_BITS: dict[type[DataType], int] = {ByteType: 8, ShortType: 16, IntegerType: 32, LongType: 64}


def _suffixed(text: str, target: DataType) -> Expr:
    """A number with a type suffix (``5L``, ``5S``, ``5Y``, ``1.5D``, ``1.5BD``) as its literal;
    one Spark's parser rejects (``128Y``, ``1.5L``, ``1e400D``) as ``unparsed``."""
    bits = _SUFFIX_BITS.get(type(target))
    if bits is not None:
        if not text.lstrip("-").isdigit() or not -(2 ** (bits - 1)) <= int(text) < 2 ** (bits - 1):
            return Opaque("unparsed")
        return Lit(int(text), target)
    if isinstance(target, (DoubleType, FloatType)):
        value = float(text)
        return Opaque("unparsed") if math.isinf(value) else Lit(value, target)
    decimal = Decimal(text)
    return Lit(decimal, decimal_type(decimal))


def _from_sqlglot(node: exp.Expression) -> Expr:  # noqa: C901 - one dispatch over node classes
    if node.args.get("negate"):  # ``x NOT LIKE y`` and the like: sqlglot flags the node itself
        positive = node.copy()
        positive.set("negate", None)
        return Call("not", (_from_sqlglot(positive),))
    if isinstance(node, exp.Paren):
        return _from_sqlglot(node.this)
    if isinstance(node, exp.Column):
        return Ref(tuple(part.name for part in node.parts))
    if isinstance(node, exp.Dot):
        base = _from_sqlglot(node.this)
        if isinstance(base, Ref) and isinstance(node.expression, exp.Identifier):
            return Ref((*base.parts, node.expression.name))
        return Opaque("field")
    if isinstance(node, exp.Literal):
        return Lit(node.this, StringType()) if node.is_string else _number(node.this)
    if isinstance(node, exp.Boolean):
        return Lit(bool(node.this), BooleanType())
    if isinstance(node, exp.Null):
        return Lit(None, NullType())
    if isinstance(node, exp.Neg):
        inner = _from_sqlglot(node.this)
        if isinstance(inner, Lit) and isinstance(inner.value, (int, float, Decimal)) and not isinstance(inner.value, bool):
            return _number("-" + str(node.this.this)) if isinstance(node.this, exp.Literal) else Lit(-inner.value, inner.type)
        return Call("negative", (inner,))
    if isinstance(node, (exp.Cast, exp.TryCast)):
        target = sql_type(node.to)
        if target is None:
            return Opaque("cast", (_from_sqlglot(node.this),))
        if "safe" not in node.args and isinstance(node.this, exp.Literal) and not node.this.is_string:
            return _suffixed(node.this.this, target)  # ``5L``, ``1.5BD``: sqlglot's cast without CAST's options
        # sqlglot reads ``DATE '...'`` as a Cast and Spark's ``CAST(...)`` as a TryCast
        typed = type(node) is exp.Cast and isinstance(node.this, exp.Literal) and node.this.is_string
        return Cast(_from_sqlglot(node.this), target, literal=typed)
    if isinstance(node, exp.Not):
        inner = node.this
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            return Call("isnotnull", (_from_sqlglot(inner.this),))
        return Call("not", (_from_sqlglot(inner),))
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        return Call("isnull", (_from_sqlglot(node.this),))
    if isinstance(node, exp.NEQ):
        return Call("not", (Call("=", (_from_sqlglot(node.this), _from_sqlglot(node.expression))),))
    if type(node) in _BINARY:
        return Call(_BINARY[type(node)], (_from_sqlglot(node.this), _from_sqlglot(node.expression)))
    if isinstance(node, exp.In):
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            return Opaque("subquery")
        return Call("in", (_from_sqlglot(node.this), *(_from_sqlglot(e) for e in node.expressions)))
    if isinstance(node, exp.Between):  # Spark's parser keeps it a function call
        return Call("between", (_from_sqlglot(node.this), _from_sqlglot(node.args["low"]), _from_sqlglot(node.args["high"])))
    if isinstance(node, (exp.Subquery, exp.Select)) or (isinstance(node, exp.Exists) and isinstance(node.this, exp.Query)):
        return Opaque("subquery")
    if isinstance(node, exp.Lambda):
        return Opaque("lambda")
    if isinstance(node, exp.Func):
        name = node.sql_name() if not isinstance(node, exp.Anonymous) else str(node.this)
        args = tuple(_from_sqlglot(a) for a in node.iter_expressions())
        return call(name, *args)
    return Opaque(type(node).__name__.lower(), tuple(_from_sqlglot(a) for a in node.iter_expressions()))


# --------------------------------------------------------------------------- Columns


def from_column(column: Column) -> Expr:
    """A Column (Connect's or classic) as the tree."""
    if type(column).__module__.startswith("pyspark.sql.connect"):  # its expression is plain Python
        return _from_connect(column._expr)
    from .classic import classic_column_tree

    return classic_column_tree(column)


def from_condition(condition: str | Column) -> Expr:
    """A ``filter``/``where`` argument (SQL text or Column) as the tree."""
    return from_sql(condition) if isinstance(condition, str) else from_column(condition)


def _from_connect(node: Any) -> Expr:  # noqa: C901 - one dispatch over Connect's expression classes
    from pyspark.sql.connect import expressions as ce

    if isinstance(node, ce.ColumnReference):
        if node._is_metadata_column:
            return Opaque("metadata")
        try:
            return Ref(tuple(attribute_parts(node._unparsed_identifier)))
        except DeltaAnalysisException:  # Spark refuses the name when it analyzes it
            return Opaque("name")
    if isinstance(node, ce.LiteralExpression):
        return typed_literal(node._value, node._dataType)
    if isinstance(node, ce.SQLExpression):
        return from_sql(node._expr)
    if isinstance(node, ce.ColumnAlias):
        return _from_connect(node._child)
    if isinstance(node, ce.CastExpression):
        data_type = node._data_type
        if isinstance(data_type, str):
            parsed = from_sql(f"CAST(NULL AS {data_type})")
            if not isinstance(parsed, Cast):
                return Opaque("cast", (_from_connect(node._expr),))
            data_type = parsed.type
        return Cast(_from_connect(node._expr), data_type)
    if isinstance(node, ce.UnresolvedFunction):
        return call(node._name, *(_from_connect(a) for a in node._args))
    if isinstance(node, ce.UnresolvedExtractValue):
        return extract(_from_connect(node._child), _from_connect(node._extraction))
    if isinstance(node, ce.CaseWhen):
        args = [_from_connect(e) for branch in node._branches for e in branch]
        if node._else_value is not None:
            args.append(_from_connect(node._else_value))
        return Call("when", tuple(args))
    if isinstance(node, ce.CommonInlineUserDefinedFunction):
        return Opaque("udf", tuple(_from_connect(a) for a in node._arguments))
    if isinstance(node, ce.SubqueryExpression):
        return Opaque("subquery")
    return Opaque(type(node).__name__.lower())


def extract(child: Expr, key: Expr) -> Expr:
    """``child[key]``: a struct field when ``child`` is a name and ``key`` a string (resolution checks it)."""
    if isinstance(child, Ref) and isinstance(key, Lit) and isinstance(key.value, str):
        return Ref((*child.parts, key.value))
    return Call("extract", (child, key))

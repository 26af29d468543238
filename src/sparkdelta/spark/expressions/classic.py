"""The one place a classic (py4j) Column is read: its expression exists only in the JVM.

A classic ``Column`` is a handle on a JVM ``Column``; unlike a Spark Connect Column it
holds no Python expression, and no DataFrame-level API returns its expression with types
(``str(column)`` prints literals without them: ``DATE '2024-01-02'`` and ``'2024-01-02'``
both print ``2024-01-02``). So this adapter walks the JVM Column's unresolved
``ColumnNode`` tree (``org.apache.spark.sql.internal``: the same shapes Spark Connect's
client builds in Python) and yields the neutral tree of ``tree.py``. Nothing else in
sparkdelta's expression analysis touches the JVM; a Connect session never reaches here.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from pyspark.sql import Column
from pyspark.sql.types import DataType, DateType, _parse_datatype_json_string

from .tree import Cast, Expr, Lit, Opaque, Ref, call, extract, from_sql, python_literal, timestamp_literal, typed_literal


def classic_column_tree(column: Column) -> Expr:
    """A classic Column's expression as the neutral tree (``Opaque`` where it cannot be read)."""
    try:
        return _node(column._jc.node())  # type: ignore[operator]
    except Exception:  # a node shape py4j cannot walk: unknown, never a wrong answer
        return Opaque("jvm")


def _seq(seq: Any) -> list[Any]:
    return [seq.apply(i) for i in range(seq.size())]


def _data_type(jvm_type: Any) -> DataType:
    return _parse_datatype_json_string(str(jvm_type.json()))


def _node(node: Any) -> Expr:  # noqa: C901 - one dispatch over ColumnNode classes
    kind = str(node.getClass().getSimpleName())
    if kind == "UnresolvedAttribute":
        if bool(node.isMetadataColumn()):
            return Opaque("metadata")
        return Ref(tuple(str(p) for p in _seq(node.nameParts())))
    if kind == "Literal":
        return _literal(node)
    if kind == "SqlExpression":
        return from_sql(str(node.expression()))
    if kind == "Alias":
        return _node(node.child())
    if kind == "Cast":
        return Cast(_node(node.child()), _data_type(node.dataType()))
    if kind == "UnresolvedFunction":
        return call(str(node.functionName()), *(_node(a) for a in _seq(node.arguments())))
    if kind == "UnresolvedExtractValue":
        return extract(_node(node.child()), _node(node.extraction()))
    if kind == "CaseWhenOtherwise":
        args: list[Expr] = []
        for branch in _seq(node.branches()):
            args += [_node(branch._1()), _node(branch._2())]
        otherwise = node.otherwise()
        if otherwise.isDefined():
            args.append(_node(otherwise.get()))
        return call("when", *args)
    if kind == "InvokeInlineUserDefinedFunction":
        return Opaque("udf", tuple(_node(a) for a in _seq(node.arguments())))
    return Opaque(kind.lower())


def _literal(node: Any) -> Expr:
    """A JVM literal: typed when the node says so, else typed by its JVM value's class, as ``lit`` does."""
    value = node.value()
    stated = node.dataType()
    if not isinstance(value, (type(None), bool, int, float, str, Decimal, bytes, bytearray)):
        return _jvm_value(value)
    if stated.isDefined():
        return typed_literal(value, _data_type(stated.get()))
    return python_literal(value)


def _jvm_value(value: Any) -> Expr:
    """A ``java.sql.Date`` / ``java.sql.Timestamp`` (what pyspark's converters send) as a literal."""
    kind = str(value.getClass().getName())
    if kind in ("java.sql.Date", "java.time.LocalDate"):
        return Lit(dt.date.fromisoformat(str(value.toString())), DateType())
    if kind == "java.sql.Timestamp":
        millis, nanos = int(value.getTime()), int(value.getNanos())
        return timestamp_literal((millis // 1000) * 1_000_000 + nanos // 1000)
    return Opaque("literal")

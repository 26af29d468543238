"""Spark 4's grammar for ``ALTER TABLE t {ALTER | CHANGE} [COLUMN] ...``, which sqlglot lacks.

sqlglot knows a few ``ALTER COLUMN`` actions one column at a time and turns the rest
(``FIRST``/``AFTER``, Hive's ``CHANGE COLUMN a a INT``, several columns at once) into an
opaque command, which must never reach Spark for a Delta table: Spark would change only
its catalog entry. So both forms of Spark's grammar are parsed here, permissively: what
Spark's parser refuses in them (a rename or ``NOT NULL`` through Hive's form, no action
at all) is parsed too and refused by ``sql/alter.py``, where the table is known to be Delta.

- ``alterColumnSpec [, ...]``, each ``column [TYPE t | COMMENT 'c' | FIRST | AFTER c |
  {SET | DROP} NOT NULL | SET DEFAULT e | DROP DEFAULT | SYNC IDENTITY]``: one
  ``ColumnSpec`` each.
- Hive's ``CHANGE [COLUMN] column new_name type [NOT NULL] [COMMENT 'c'] [FIRST | AFTER c]``:
  a ``HiveChangeColumn``.

Data types keep the statement's own text (``type_sql``) for Spark's DDL parser: sqlglot's
regenerated SQL loses some (``VARCHAR(5)`` comes back as ``STRING``).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.tokens import TokenType


class ColumnSpec(exp.Expression):
    """One column of ``ALTER COLUMN a ..., b ...``: ``expressions`` is its name's parts."""

    arg_types = {
        "expressions": True,
        "type_sql": False,
        "comment": False,
        "position": False,
        "nullable": False,
        "default": False,
        "drop_default": False,
        "sync_identity": False,
    }


class HiveChangeColumn(exp.Expression):
    """``CHANGE COLUMN old new type ...``: ``expressions`` is the old name's parts."""

    arg_types = {
        "expressions": True,
        "new_name": True,
        "type_sql": True,
        "not_null": False,
        "comment": False,
        "position": False,
    }


def parse_alter_column(parser: Any, change: bool) -> list[exp.Expression]:
    """The actions after ``ALTER TABLE t ALTER`` (``change``: ``CHANGE``) up to the statement's end."""
    parser._match(TokenType.COLUMN)
    if not change:
        return _column_specs(parser)
    specs = parser._try_parse(lambda: _column_specs(parser))
    return specs if specs else [_hive_change(parser)]


def _column_specs(parser: Any) -> list[exp.Expression]:
    specs = [_column_spec(parser)]
    while parser._match(TokenType.COMMA):
        specs.append(_column_spec(parser))
    _end(parser)
    return specs


def _column_spec(parser: Any) -> exp.Expression:
    parts = _name_parts(parser)
    args: dict[str, Any] = {}
    if parser._match_text_seq("TYPE"):
        args["type_sql"] = _type_sql(parser)
    elif parser._match(TokenType.COMMENT):
        args["comment"] = _string(parser)
    elif parser._match_text_seq("SET", "NOT", "NULL"):
        args["nullable"] = exp.false()
    elif parser._match_text_seq("DROP", "NOT", "NULL"):
        args["nullable"] = exp.true()
    elif parser._match_text_seq("SET", "DEFAULT"):
        args["default"] = parser._parse_disjunction()
    elif parser._match_text_seq("DROP", "DEFAULT"):
        args["drop_default"] = True
    elif parser._match_text_seq("SYNC", "IDENTITY"):
        args["sync_identity"] = True
    else:
        position = _position(parser)
        if position is not None:
            args["position"] = position
        elif parser._curr and parser._curr.token_type != TokenType.COMMA:
            parser.raise_error(f"ALTER COLUMN: unexpected {parser._curr.text!r}")
    return parser.expression(ColumnSpec(expressions=parts, **args))


def _hive_change(parser: Any) -> exp.Expression:
    parts = _name_parts(parser)
    new_name = parser._parse_id_var(any_token=True)
    if new_name is None:
        parser.raise_error("CHANGE COLUMN: expected the column's new name")
    type_sql = _type_sql(parser)
    not_null = parser._match_text_seq("NOT", "NULL")
    comment = _string(parser) if parser._match(TokenType.COMMENT) else None
    position = _position(parser)
    _end(parser)
    return parser.expression(
        HiveChangeColumn(
            expressions=parts, new_name=new_name, type_sql=type_sql, not_null=not_null, comment=comment, position=position
        )
    )


def _name_parts(parser: Any) -> list[exp.Expression]:
    """A multipart column name (``s.x``, ``arr.element.y``, ``` `a.b` ```)."""
    parts = [parser._parse_id_var(any_token=True)]
    while parser._match(TokenType.DOT):
        parts.append(parser._parse_id_var(any_token=True))
    if any(p is None for p in parts):
        parser.raise_error("expected a column name")
    return parts


def _position(parser: Any) -> exp.Expression | None:
    if parser._match_text_seq("FIRST"):
        return exp.ColumnPosition(position="FIRST")
    if parser._match_text_seq("AFTER"):
        column = parser._parse_id_var(any_token=True)
        if column is None:
            parser.raise_error("AFTER: expected a column name")
        return exp.ColumnPosition(this=column, position="AFTER")
    return None


def _type_sql(parser: Any) -> str:
    """A data type, as the statement spells it."""
    start = parser._curr
    if not start or parser._parse_types(check_func=False, schema=True, allow_identifiers=False) is None:
        parser.raise_error("expected a data type")
    return str(parser._find_sql(start, parser._prev))


def _string(parser: Any) -> str:
    text = parser._parse_string()
    if not isinstance(text, exp.Literal):
        parser.raise_error("COMMENT: expected a string")
    return str(text.this)


def _end(parser: Any) -> None:
    if parser._curr:  # the end is a falsy sentinel token
        parser.raise_error(f"unexpected {parser._curr.text!r}")


__all__ = ["ColumnSpec", "HiveChangeColumn", "parse_alter_column"]

"""Delta's SQL grammar as a sqlglot dialect: Spark's, plus the statements delta-spark adds.

sqlglot's Spark dialect parses SELECT, INSERT, DELETE, UPDATE, MERGE (with ``BY SOURCE``)
and ``VERSION AS OF``; it falls back to an opaque command for VACUUM and OPTIMIZE and
fails on the rest. This dialect parses them into the expression classes below, so a
mistake in one is reported with its line and column and an unsupported clause by name.
"""

from __future__ import annotations

import re
from typing import Any, cast

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError
from sqlglot.tokens import TokenType

from .alter_grammar import parse_alter_column


class DescribeHistory(exp.Expression):
    arg_types = {"this": True, "limit": False}


class DescribeDetail(exp.Expression):
    arg_types = {"this": True}


class ShowTblProperties(exp.Expression):
    arg_types = {"this": True, "key": False}


class Vacuum(exp.Expression):
    arg_types = {"this": True, "retain_hours": False, "dry_run": False}


class Optimize(exp.Expression):
    # ``where_text``: the predicate as written, which delta-spark parses and records itself
    # (sqlglot's rewrite of it is not Spark's: ``'it''s'`` would become a CONCAT).
    arg_types = {"this": True, "where": False, "where_text": False, "zorder": False}


class Reorg(exp.Expression):
    arg_types = {"this": True, "where": False, "where_text": False}


class Restore(exp.Expression):
    arg_types = {"this": True, "kind": True, "expression": True}


class ConvertToDelta(exp.Expression):
    arg_types = {"this": True, "no_statistics": False, "partitions": False}


class Generate(exp.Expression):
    arg_types = {"this": True, "mode": True}


class CloneTable(exp.Expression):
    arg_types = {
        "this": True,
        "source": True,
        "shallow": False,
        "replace": False,
        "exists": False,
        "properties": False,
    }


# Set in a ``Create``'s ``meta`` for ``REPLACE TABLE`` (no ``CREATE OR``): the table must exist.
REPLACE_ONLY = "sparkdelta_replace_only"

DELTA_STATEMENTS = (
    DescribeHistory,
    DescribeDetail,
    ShowTblProperties,
    Vacuum,
    Optimize,
    Reorg,
    Restore,
    ConvertToDelta,
    CloneTable,
    Generate,
)


_SPARK_JSON_EXTRACT = Spark.Generator.TRANSFORMS[exp.JSONExtract]


class DeltaSpark(Spark):
    """Spark SQL with Delta's statements."""

    class Tokenizer(Spark.Tokenizer):
        KEYWORDS = {k: v for k, v in Spark.Tokenizer.KEYWORDS.items() if k not in ("VACUUM", "OPTIMIZE")}
        COMMANDS = Spark.Tokenizer.COMMANDS - {TokenType.SHOW}

    # sqlglot declares a dialect's Generator and Parser as class attributes, which mypy takes for variables.
    class Generator(Spark.Generator):  # type: ignore[valid-type,misc]
        TRANSFORMS = {
            **Spark.Generator.TRANSFORMS,
            exp.JSONExtract: lambda self, e: (
                f"{self.sql(e, 'this')}:{self.sql(e, 'expression')}"
                if e.args.get("variant_extract")
                else _SPARK_JSON_EXTRACT(self, e)
            ),
            # Spark's PARSE_JSON makes a variant; sqlglot's Spark dialect drops the call, leaving the string.
            exp.ParseJSON: lambda self, e: self.func("PARSE_JSON", e.this),
        }

        def jsonpath_sql(self, expression: exp.JSONPath) -> str:
            """A variant extract's path is written bare (``v:a.b``), any other JSON path quoted."""
            if isinstance(expression.parent, exp.JSONExtract) and expression.parent.args.get("variant_extract"):
                return "".join(self.json_path_part(part) for part in expression.expressions[1:]).lstrip(".")
            return super().jsonpath_sql(expression)

    class Parser(Spark.Parser):  # type: ignore[valid-type,misc]
        # Spark 4's ``v:path`` extracts from a variant, as in Databricks SQL.
        COLON_IS_VARIANT_EXTRACT = True

        STATEMENT_PARSERS = {
            **Spark.Parser.STATEMENT_PARSERS,
            TokenType.SHOW: lambda self: self._parse_show_statement(),
            TokenType.DESCRIBE: lambda self: self._parse_delta_describe(),
            TokenType.DESC: lambda self: self._parse_delta_describe(),
            TokenType.CREATE: lambda self: self._parse_create_or_clone(),
            TokenType.REPLACE: lambda self: self._parse_create_or_clone(),
        }

        # ALTER TABLE t {ALTER | CHANGE} [COLUMN] ...: Spark's whole grammar (sql/alter_grammar.py).
        ALTER_PARSERS = {
            **Spark.Parser.ALTER_PARSERS,
            "ALTER": lambda self: parse_alter_column(self, change=False),
            "CHANGE": lambda self: parse_alter_column(self, change=True),
        }

        def _parse_statement(self) -> Any:
            if self._curr and self._curr.token_type == TokenType.VAR:
                word = self._curr.text.upper()
                handler = {
                    "VACUUM": self._parse_vacuum,
                    "OPTIMIZE": self._parse_optimize,
                    "REORG": self._parse_reorg,
                    "RESTORE": self._parse_restore,
                    "CONVERT": self._parse_convert,
                    "GENERATE": self._parse_generate,
                }.get(word)
                if handler is not None:
                    self._advance()
                    return handler()
            return super()._parse_statement()

        def _delta_table(self, path_string: bool = False) -> exp.Table:
            """``name``, ``db.name``, ``catalog.db.name`` or ``delta.`/path```, and nothing after it;
            with ``path_string``, also a quoted path (``'/path'``), where delta-spark's grammar takes
            one (``VACUUM``, ``OPTIMIZE``, ``DESCRIBE HISTORY | DETAIL``): as ``delta.`/path```."""
            if path_string and self._curr and self._curr.token_type == TokenType.STRING:
                path = ""
                while self._match(TokenType.STRING):  # adjacent literals are one, as in Spark
                    path += self._prev.text
                return exp.Table(this=exp.to_identifier(path, quoted=True), db=exp.to_identifier("delta"))
            parts = [self._parse_id_var(any_token=False)]
            while self._match(TokenType.DOT):
                parts.append(self._parse_id_var(any_token=False))
            if any(p is None for p in parts) or len(parts) > 3:
                self.raise_error("expected a table name or delta.`/path`" + (" or a quoted path" if path_string else ""))
            names = dict(zip(("this", "db", "catalog"), reversed(parts), strict=False))
            return exp.Table(**names)

        def _rest_is_empty(self, statement: str) -> None:
            if self._curr and self._curr.token_type != TokenType.SEMICOLON:
                self.raise_error(f"{statement}: unsupported clause {self._curr.text!r}")

        def _parse_show_statement(self) -> exp.Expression:
            if self._match_text_seq("TBLPROPERTIES"):
                table = self._delta_table()
                key = None
                if self._match(TokenType.L_PAREN):
                    key = self._parse_string()
                    if key is None:
                        parts = [self._parse_var(any_token=True)]
                        while self._match(TokenType.DOT):
                            parts.append(self._parse_var(any_token=True))
                        key = exp.Literal.string(".".join(p.name for p in parts if p is not None))
                    self._match_r_paren()
                self._rest_is_empty("SHOW TBLPROPERTIES")
                return self.expression(ShowTblProperties(this=table, key=key))
            return self._parse_as_command(self._prev)

        def _parse_delta_describe(self) -> exp.Expression:
            if self._match_text_seq("HISTORY"):
                table = self._delta_table(path_string=True)
                limit = self._parse_number() if self._match(TokenType.LIMIT) else None
                self._rest_is_empty("DESCRIBE HISTORY")
                return self.expression(DescribeHistory(this=table, limit=limit))
            if self._match_text_seq("DETAIL"):
                table = self._delta_table(path_string=True)
                self._rest_is_empty("DESCRIBE DETAIL")
                return self.expression(DescribeDetail(this=table))
            return self._parse_describe()

        def _parse_vacuum(self) -> exp.Expression:
            table = self._delta_table(path_string=True)
            hours = None
            if self._match_text_seq("RETAIN"):
                hours = self._parse_number()
                if not self._match_text_seq("HOURS"):
                    self.raise_error("VACUUM: RETAIN takes a number of HOURS")
            if self._match_text_seq("LITE") or self._match_text_seq("FULL"):
                self.raise_error(f"VACUUM: {self._prev.text.upper()} is not supported")
            dry_run = self._match_text_seq("DRY", "RUN")
            self._rest_is_empty("VACUUM")
            return self.expression(Vacuum(this=table, retain_hours=hours, dry_run=dry_run))

        def _parse_where_text(self) -> tuple[exp.Expression | None, exp.Literal | None]:
            """A statement's WHERE predicate, parsed (to find the clause's end) and as written."""
            if not self._match(TokenType.WHERE):
                return None, None
            first = self._curr
            where = self._parse_assignment()
            if where is None or first is None or self._prev is None:
                self.raise_error("expected a predicate after WHERE")
            return where, exp.Literal.string(self.sql[first.start : self._prev.end + 1])

        def _parse_optimize(self) -> exp.Expression:
            table = self._delta_table(path_string=True)
            where, where_text = self._parse_where_text()
            zorder = None
            if self._match_text_seq("ZORDER", "BY"):
                wrapped = self._match(TokenType.L_PAREN)
                zorder = self._parse_csv(self._parse_column)
                if wrapped:
                    self._match_r_paren()
            self._rest_is_empty("OPTIMIZE")
            return self.expression(Optimize(this=table, where=where, where_text=where_text, zorder=zorder))

        def _parse_reorg(self) -> exp.Expression:
            self._match(TokenType.TABLE)
            table = self._delta_table()
            where, where_text = self._parse_where_text()
            if not self._match_text_seq("APPLY", "(", "PURGE", ")"):
                self.raise_error("REORG TABLE: only APPLY (PURGE) is supported")
            self._rest_is_empty("REORG TABLE")
            return self.expression(Reorg(this=table, where=where, where_text=where_text))

        def _parse_restore(self) -> exp.Expression:
            self._match(TokenType.TABLE)
            table = self._delta_table()
            self._match_text_seq("TO")
            if self._match_text_seq("VERSION", "AS", "OF"):
                kind, value = "VERSION", self._parse_number()
            elif self._match_text_seq("TIMESTAMP", "AS", "OF"):
                kind, value = "TIMESTAMP", self._parse_assignment()
            else:
                self.raise_error("RESTORE: expected TO VERSION AS OF n or TO TIMESTAMP AS OF expression")
            self._rest_is_empty("RESTORE")
            return self.expression(Restore(this=table, kind=kind, expression=value))

        def _parse_convert(self) -> exp.Expression:
            if not self._match_text_seq("TO", "DELTA"):
                self.raise_error("expected CONVERT TO DELTA")
            table = self._delta_table()
            no_statistics = self._match_text_seq("NO", "STATISTICS")
            partitions = None
            if self._match(TokenType.PARTITION_BY):
                partitions = self._parse_wrapped_csv(self._parse_field_def)
            self._rest_is_empty("CONVERT TO DELTA")
            return self.expression(ConvertToDelta(this=table, no_statistics=no_statistics, partitions=partitions))

        def _parse_generate(self) -> exp.Expression:
            """``GENERATE mode FOR TABLE name | delta.`/path``` (delta-spark's grammar takes no quoted path here)."""
            mode = self._parse_id_var(any_token=False)
            if mode is None:
                self.raise_error("GENERATE: expected a mode, such as symlink_format_manifest")
            if not self._match_pair(TokenType.FOR, TokenType.TABLE):
                self.raise_error("GENERATE: expected FOR TABLE after the mode")
            table = self._delta_table()
            self._rest_is_empty("GENERATE")
            return self.expression(Generate(this=table, mode=mode))

        def _is_clone(self) -> bool:
            """Whether CLONE follows the target name (before any parenthesis, AS or USING)."""
            for token in self._tokens[self._index :]:
                if token.token_type in (TokenType.L_PAREN, TokenType.ALIAS, TokenType.SEMICOLON, TokenType.USING):
                    return False
                if token.token_type == TokenType.VAR and token.text.upper() == "CLONE":
                    return True
            return False

        def _parse_create_or_clone(self) -> exp.Expression:
            replacing = self._prev.token_type == TokenType.REPLACE
            if not self._is_clone():
                if replacing and not (self._curr and self._curr.token_type == TokenType.TABLE):
                    return self._parse_as_command(self._prev)
                create = self._parse_create()
                if replacing:
                    create.meta[REPLACE_ONLY] = True
                return create
            replace = replacing or self._match_pair(TokenType.OR, TokenType.REPLACE)
            self._match(TokenType.TABLE)
            exists = self._match_text_seq("IF", "NOT", "EXISTS")
            target = self._delta_table()
            shallow = self._match_text_seq("SHALLOW")
            if not shallow:
                self._match_text_seq("DEEP")
            self._match_text_seq("CLONE")
            source = self._delta_table()
            if self._match(TokenType.PARAMETER):
                source.set("version", at_version(self._advance_any().text, self))
            else:
                source.set("version", self._parse_version())
            properties = self._parse_properties()
            self._rest_is_empty("CLONE")
            return self.expression(
                CloneTable(this=target, source=source, shallow=shallow, replace=replace, exists=exists, properties=properties)
            )


def at_version(spec: str, parser: Any = None) -> exp.Version:
    """The time travel ``table@v12`` or ``table@yyyyMMddHHmmssSSS`` names, as ``VERSION AS OF``."""
    if re.fullmatch(r"[vV]\d+", spec):
        return exp.Version(this="VERSION", expression=exp.Literal.number(int(spec[1:])), kind="AS OF")
    if re.fullmatch(r"\d{17}", spec):
        text = f"{spec[0:4]}-{spec[4:6]}-{spec[6:8]} {spec[8:10]}:{spec[10:12]}:{spec[12:14]}.{spec[14:17]}"
        return exp.Version(this="TIMESTAMP", expression=exp.Literal.string(text), kind="AS OF")
    message = f"time travel @{spec}: expected @v<version> or @yyyyMMddHHmmssSSS"
    if parser is not None:
        parser.raise_error(message)
    raise ParseError(message)


def parse(text: str) -> list[exp.Expression]:
    """Every statement in ``text``; a ParseError names the line and column."""
    # sqlglot types the statements as its ``Expr`` trait; each is an Expression.
    return [cast(exp.Expression, s) for s in sqlglot.parse(text, dialect=DeltaSpark) if s is not None]


def parse_or_none(text: str) -> list[exp.Expression] | None:
    try:
        return parse(text)
    except ParseError:
        return None

"""A SQL predicate as Spark's parser reads it and Catalyst prints it, unresolved, in Python.

delta-spark records the partition predicates of OPTIMIZE and REORG in the commit's
``operationParameters`` as the parsed, unresolved Catalyst expression's ``toString``:
``key = 'a'`` becomes ``('key = a)``, ``p IN (1, 2)`` becomes ``'p IN (1,2)``. Its check
that a predicate names partition columns only also works on that unresolved expression,
by the names its attributes spell. This module does both without Spark's JVM parser
(which Spark Connect has no handle on): it tokenizes and parses the predicates people
write (comparisons, AND/OR/NOT, IN, BETWEEN, LIKE, IS [NOT] NULL, arithmetic, CAST,
function calls; string, integer, decimal, date, timestamp, binary, boolean and null
literals) the way Spark's grammar does, and prints each node as its Catalyst class does.
Spark's own quirks are kept: a chain of ANDs or ORs becomes a balanced tree, ``!=`` a
``NOT (a = b)``, ``BETWEEN`` a function call, ``1E+2BD`` prints ``100``.

Anything else (subqueries, CASE, lambdas, intervals, functions the grammar treats
specially, double literals, whose text depends on the JVM's version, literals whose
value depends on settings) gets no answer rather than a possibly different string; the
caller then asks Spark's parser. Tests hold each form against Spark's parser itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .sql_tokens import (
    END,
    NUMBER,
    OP,
    QUOTED,
    STRING,
    WORD,
    Token,
    binary_text,
    date_text,
    number_text,
    timestamp_text,
    tokens,
)


@dataclass(frozen=True)
class ParsedPredicate:
    """A predicate's Catalyst ``toString`` and the names of the columns it references.

    ``references`` are the attributes' name parts joined by ``.`` (delta-spark's spelling
    in its errors), in order of first appearance, each once.
    """

    text: str
    references: tuple[str, ...]


_SIMPLE_TYPES = {
    "boolean": "boolean",
    "tinyint": "tinyint",
    "byte": "tinyint",
    "smallint": "smallint",
    "short": "smallint",
    "int": "int",
    "integer": "int",
    "bigint": "bigint",
    "long": "bigint",
    "float": "float",
    "real": "float",
    "double": "double",
    "string": "string",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "binary": "binary",
}
_DECIMAL_TYPES = frozenset({"decimal", "dec", "numeric"})
_CHAR_TYPES = frozenset({"char", "character", "varchar"})
# Names whose calls Spark's grammar builds into something other than a plain function call.
_SPECIAL_FUNCTIONS = frozenset(
    "any_value cast date_add date_diff dateadd datediff exists extract first identifier last overlay".split()
    + "position struct substr substring timestampadd timestampdiff trim try_cast".split()
)
# Words that start syntax this module leaves to Spark.
_UNSUPPORTED_WORDS = frozenset({"case", "exists", "interval", "select", "with", "values", "from", "table"})
# Keywords Spark never reads as a column name where a value is expected.
_RESERVED = frozenset("and or not in is like ilike rlike regexp between escape distinct as when then else end".split())
_COMPARISONS = {"=": "=", "==": "=", "<": "<", ">": ">", "<=": "<=", ">=": ">=", "<=>": "<=>", "!>": "<=", "!<": ">="}
# Binary arithmetic operators by precedence, tightest first (Spark's valueExpression).
_ARITHMETIC_LEVELS: tuple[frozenset[str], ...] = (
    frozenset({"*", "/", "%", "div"}),
    frozenset({"+", "-", "||"}),
    frozenset({"&"}),
    frozenset({"^"}),
    frozenset({"|"}),
)


@dataclass
class _Parser:
    tokens: list[Token]
    time_zone: str | None
    index: int = 0
    references: list[str] = field(default_factory=list)

    # -- tokens

    @property
    def current(self) -> Token:
        return self.tokens[self.index]

    def advance(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def at_op(self, *ops: str) -> bool:
        return self.current.kind == OP and self.current.value in ops

    def at_word(self, *words: str) -> bool:
        return self.current.kind == WORD and self.current.value.lower() in words

    def word_after(self, offset: int, *words: str) -> bool:
        token = self.tokens[min(self.index + offset, len(self.tokens) - 1)]
        return token.kind == WORD and token.value.lower() in words

    def expect_op(self, op: str) -> None:
        if not self.at_op(op):
            raise ValueError(f"expected {op!r} at {self.current.position}")
        self.advance()

    def expect_word(self, word: str) -> None:
        if not self.at_word(word):
            raise ValueError(f"expected {word.upper()} at {self.current.position}")
        self.advance()

    # -- boolean expressions

    def expression(self) -> str:
        return self.logical("or", self.conjunction)

    def conjunction(self) -> str:
        return self.logical("and", self.negation)

    def logical(self, word: str, operand: Callable[[], str]) -> str:
        """``a OP b OP c ...`` as Spark's AstBuilder builds it: a balanced tree, not a left-deep one."""
        operands = [operand()]
        while self.at_word(word):
            self.advance()
            operands.append(operand())

        def tree(low: int, high: int) -> str:
            if low == high:
                return operands[low]
            if high - low == 1:
                return f"({operands[low]} {word.upper()} {operands[high]})"
            middle = low + (high - low) // 2
            return f"({tree(low, middle)} {word.upper()} {tree(middle + 1, high)})"

        return tree(0, len(operands) - 1)

    def negation(self) -> str:
        if self.at_word("not") or self.at_op("!"):
            self.advance()
            return f"NOT {self.negation()}"
        return self.predicated()

    def predicated(self) -> str:
        value = self.comparison()
        if self.at_word("is"):
            return self.is_predicate(value)
        negated = False
        if self.at_word("not") and self.word_after(1, "between", "in", "like", "ilike", "rlike", "regexp"):
            self.advance()
            negated = True
        text = self.predicate(value)
        if text is None:
            if negated:
                raise ValueError("NOT without a predicate")
            return value
        return f"NOT {text}" if negated else text

    def predicate(self, value: str) -> str | None:
        if self.at_word("between"):
            self.advance()
            low = self.comparison()
            self.expect_word("and")
            high = self.comparison()
            return f"'between({value}, {low}, {high})"
        if self.at_word("in"):
            self.advance()
            self.expect_op("(")
            if self.at_word(*_UNSUPPORTED_WORDS):
                raise ValueError("IN subquery")
            items = [self.expression()]
            while self.at_op(","):
                self.advance()
                items.append(self.expression())
            self.expect_op(")")
            return f"{value} IN ({','.join(items)})"
        if self.at_word("like", "ilike"):
            kind = self.advance().value.lower()
            if self.at_word("any", "all", "some"):
                raise ValueError("LIKE ANY/ALL")
            pattern = self.comparison()
            escape = "\\"
            if self.at_word("escape"):
                self.advance()
                token = self.advance()
                if token.kind != STRING or len(token.value) != 1:
                    raise ValueError("ESCAPE")
                escape = token.value
            if kind == "ilike":
                return f"ilike({value}, {pattern}, {escape})"
            return f"{value} LIKE {pattern}" + (f" ESCAPE '{escape}'" if escape != "\\" else "")
        if self.at_word("rlike", "regexp"):
            self.advance()
            return f"RLIKE({value}, {self.comparison()})"
        return None

    def is_predicate(self, value: str) -> str:
        self.advance()
        negated = self.at_word("not")
        if negated:
            self.advance()
        if self.at_word("null"):
            self.advance()
            return f"isnotnull({value})" if negated else f"isnull({value})"
        if self.at_word("true", "false"):
            text = f"({value} <=> {self.advance().value.lower()})"
            return f"NOT {text}" if negated else text
        if self.at_word("distinct"):
            self.advance()
            self.expect_word("from")
            text = f"({value} <=> {self.comparison()})"
            return text if negated else f"NOT {text}"
        raise ValueError("IS predicate")

    # -- value expressions

    def comparison(self) -> str:
        left = self.arithmetic(len(_ARITHMETIC_LEVELS) - 1)
        while self.current.kind == OP and self.current.value in (*_COMPARISONS, "<>", "!="):
            op = self.advance().value
            right = self.arithmetic(len(_ARITHMETIC_LEVELS) - 1)
            left = f"NOT ({left} = {right})" if op in ("<>", "!=") else f"({left} {_COMPARISONS[op]} {right})"
        return left

    def arithmetic(self, level: int) -> str:
        operand = (lambda: self.arithmetic(level - 1)) if level > 0 else self.unary
        left = operand()
        ops = _ARITHMETIC_LEVELS[level]
        while (self.current.kind == OP and self.current.value in ops) or ("div" in ops and self.at_word("div")):
            op = self.advance().value.lower()
            right = operand()
            left = f"concat({left}, {right})" if op == "||" else f"({left} {op} {right})"
        return left

    def unary(self) -> str:
        if self.at_op("-"):
            self.advance()
            if self.current.kind == NUMBER:  # Spark's grammar reads a signed number as one literal
                return number_text(self.advance().value, negative=True)
            return f"-{self.unary()}"
        if self.at_op("+"):
            self.advance()
            return f"positive({self.unary()})"
        if self.at_op("~"):
            self.advance()
            return f"~{self.unary()}"
        return self.primary()

    def primary(self) -> str:
        token = self.current
        if token.kind == NUMBER:
            self.advance()
            return number_text(token.value, negative=False)
        if token.kind == STRING:
            parts = []
            while self.current.kind == STRING:  # adjacent literals concatenate
                parts.append(self.advance().value)
            return "".join(parts)
        if self.at_op("("):
            self.advance()
            if self.at_word(*_UNSUPPORTED_WORDS):
                raise ValueError("subquery")
            inner = self.expression()
            if self.at_op(","):
                raise ValueError("a struct of values")
            self.expect_op(")")
            return inner
        if token.kind == WORD:
            word = token.value.lower()
            following = self.tokens[self.index + 1]
            if word in ("null", "true", "false") and not (following.kind == OP and following.value in ("(", ".")):
                self.advance()
                return word
            if word == "cast" and following.kind == OP and following.value == "(":
                return self.cast()
            if following.kind == STRING:
                return self.typed_literal()
            if word in _RESERVED or (word in _UNSUPPORTED_WORDS and not (following.kind == OP and following.value == ".")):
                raise ValueError(word.upper())
        if token.kind in (WORD, QUOTED):
            return self.name_or_call()
        raise ValueError(f"unexpected {token.value or 'end'!r} at {token.position}")

    def typed_literal(self) -> str:
        kind = self.advance().value.lower()
        value = self.advance().value
        if self.current.kind == STRING:
            raise ValueError("typed literal of several strings")
        if kind == "date":
            return date_text(value)
        if kind in ("timestamp", "timestamp_ltz"):
            return timestamp_text(value, self.time_zone)
        if kind == "timestamp_ntz":
            return timestamp_text(value, None)
        if kind == "x":
            return binary_text(value)
        raise ValueError(f"{kind.upper()} literal")

    def cast(self) -> str:
        self.advance()
        self.expect_op("(")
        value = self.expression()
        self.expect_word("as")
        type_text = self.data_type()
        self.expect_op(")")
        return f"cast({value} as {type_text})"

    def data_type(self) -> str:
        if self.current.kind != WORD:
            raise ValueError("data type")
        name = self.advance().value.lower()
        parameters: list[int] = []
        if self.at_op("("):
            self.advance()
            while True:
                token = self.advance()
                if token.kind != NUMBER or not token.value.isdigit():
                    raise ValueError("type parameter")
                parameters.append(int(token.value))
                if not self.at_op(","):
                    break
                self.advance()
            self.expect_op(")")
        if name in _DECIMAL_TYPES and len(parameters) <= 2:
            precision, scale = (parameters + [10, 0][len(parameters) :]) if parameters else (10, 0)
            if len(parameters) == 1:
                scale = 0
            if not 0 < precision <= 38 or scale > precision:
                raise ValueError("decimal type")
            return f"decimal({precision},{scale})"
        if name in _CHAR_TYPES and len(parameters) == 1:
            return "string"  # Spark casts to CHAR/VARCHAR as to STRING
        if name in _SIMPLE_TYPES and not parameters:
            return _SIMPLE_TYPES[name]
        raise ValueError(f"type {name}")

    def name_or_call(self) -> str:
        parts = [self.advance().value]
        while self.at_op(".") and self.tokens[self.index + 1].kind in (WORD, QUOTED):
            self.advance()
            parts.append(self.advance().value)
        if self.at_op("("):
            return self.call(parts)
        if self.at_op(".", "["):
            raise ValueError("field access")
        reference = ".".join(parts)
        if reference not in self.references:
            self.references.append(reference)
        return "'" + ".".join(f"`{part}`" if "." in part else part for part in parts)

    def call(self, parts: list[str]) -> str:
        if any(not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part) for part in parts):
            raise ValueError("function name")
        if parts[-1].lower() in _SPECIAL_FUNCTIONS:
            raise ValueError(f"function {parts[-1]}")
        self.expect_op("(")
        distinct = ""
        if self.at_word("distinct", "all"):
            following = self.tokens[self.index + 1]
            if following.kind in (WORD, QUOTED, NUMBER, STRING):
                distinct = "distinct " if self.advance().value.lower() == "distinct" else ""
            elif following.kind == OP and following.value not in (")", ","):
                raise ValueError("DISTINCT or ALL before an operator")
        arguments: list[str] = []
        if not self.at_op(")"):
            if self.at_op("*"):
                raise ValueError("count(*)")
            arguments.append(self.expression())
            while self.at_op(","):
                self.advance()
                arguments.append(self.expression())
        self.expect_op(")")
        if self.at_word("filter", "over", "within", "ignore", "respect") or self.at_op(".", "["):
            raise ValueError("a call with a clause after it")
        return f"'{'.'.join(parts)}({distinct}{', '.join(arguments)})"


def parse_predicate(
    text: str,
    time_zone: str | None = None,
    escaped_string_literals: bool = False,
    double_quoted_identifiers: bool = False,
) -> ParsedPredicate | None:
    """``text`` as Catalyst prints the unresolved expression Spark's parser makes of it, or
    None for syntax this module does not render exactly (nor rejects as Spark would).

    ``time_zone`` is the session's (``spark.sql.session.timeZone``), for timestamp
    literals; the flags are the session's ``spark.sql.parser.escapedStringLiterals`` and
    ``spark.sql.ansi.doubleQuotedIdentifiers``, which change how literals read.
    """
    try:
        parser = _Parser(tokens(text, escaped_string_literals, double_quoted_identifiers), time_zone)
        rendered = parser.expression()
        if parser.current.kind != END:
            raise ValueError(f"unexpected {parser.current.value!r} at {parser.current.position}")
    except ValueError:  # the parser's way out of syntax it leaves to Spark
        return None
    return ParsedPredicate(rendered, tuple(parser.references))

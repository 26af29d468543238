"""Table and column names as Spark parses them (``parseMultipartIdentifier``,
``parseAttributeName``), in Python.

A name is parts separated by dots, each a run of ASCII letters, digits and underscores
(that is not a number literal such as ``1``, ``1L`` or ``1e5``) or a backquoted part
(```a.b```, with ``````` for a backquote). Whitespace and SQL comments may surround the
parts. Spark accepts every keyword as a name part, as its default (non-ANSI-reserved)
parser does.

Names this module does not accept go to Spark for its own error (a ``ParseException``,
on classic and Connect sessions alike), so a malformed name fails as it does in Spark.
"""

from __future__ import annotations

import re

from pyspark.sql import SparkSession

from ..exceptions import DeltaAnalysisException

_WORD = re.compile(r"[A-Za-z0-9_]+")
# Spark's lexer reads these runs as number literals (INTEGER_VALUE, BIGINT_LITERAL,
# EXPONENT_VALUE, DOUBLE_LITERAL, BIGDECIMAL_LITERAL...), not as identifiers.
_NUMBER = re.compile(r"\d+(?:[LSY]|(?:E\d+)?(?:BD|D|F)?)", re.IGNORECASE)
_SPACE = " \t\n\r\f\v"


def _skip_blank(text: str, at: int) -> int | None:
    """The position after the whitespace and comments at ``at``; None for an unclosed comment."""
    while at < len(text):
        if text[at] in _SPACE:
            at += 1
        elif text.startswith("--", at):
            end = text.find("\n", at)
            at = len(text) if end < 0 else end + 1
        elif text.startswith("/*", at):
            depth, at = 1, at + 2  # Spark's bracketed comments nest
            while depth:
                if at >= len(text):
                    return None
                if text.startswith("/*", at):
                    depth, at = depth + 1, at + 2
                elif text.startswith("*/", at):
                    depth, at = depth - 1, at + 2
                else:
                    at += 1
        else:
            break
    return at


def _part(text: str, at: int) -> tuple[str, int] | None:
    """The name part at ``at`` and the position after it, or None if none starts there."""
    if text.startswith("`", at):
        chars, at = [], at + 1
        while at < len(text):
            if text[at] != "`":
                chars.append(text[at])
                at += 1
            elif text.startswith("``", at):
                chars.append("`")
                at += 2
            else:
                return "".join(chars), at + 1
        return None
    word = _WORD.match(text, at)
    if word is None or _NUMBER.fullmatch(word.group()):
        return None
    return word.group(), word.end()


def split_identifier(text: str) -> list[str] | None:
    """The parts of a multipart name as Spark parses them, or None where Spark raises a parse error
    (or the name is one this parser does not follow: see ``parse_identifier``)."""
    parts: list[str] = []
    at = _skip_blank(text, 0)
    while at is not None:
        found = _part(text, at)
        if found is None:
            return None
        part, at = found
        parts.append(part)
        at = _skip_blank(text, at)
        if at is None:
            return None
        if at == len(text):
            return parts
        if text[at] != ".":
            return None
        at = _skip_blank(text, at + 1)
    return None


def parse_identifier(spark: SparkSession, text: str) -> list[str]:
    """The parts of a multipart name; a name Spark cannot parse fails with Spark's own error.

    ``spark.catalog.tableExists`` parses the name on the server (classic or Connect) and
    raises Spark's ``ParseException`` for it. Should Spark accept a name this module does
    not, sparkdelta cannot know its parts and says so.
    """
    parts = split_identifier(text)
    if parts is not None:
        return parts
    spark.catalog.tableExists(text)  # raises Spark's error for a malformed name
    raise DeltaAnalysisException(
        f"sparkdelta cannot read the table name {text!r}; put each part of it in backquotes (`db`.`table`)"
    )


def attribute_parts(name: str) -> list[str]:
    """``name``'s parts, split and unquoted as Spark's ``parseAttributeName`` does (its syntax errors too)."""

    def syntax_error() -> DeltaAnalysisException:
        return DeltaAnalysisException(
            f"Syntax error in the attribute name: {name}. Check that backticks appear "
            "in pairs, a quoted string is a complete name part and use a backtick only inside quoted name parts.",
            errorClass="INVALID_ATTRIBUTE_NAME_SYNTAX",
        )

    parts: list[str] = []
    current: list[str] = []
    quoting = False
    i = 0
    while i < len(name):
        char = name[i]
        if quoting:
            if char != "`":
                current.append(char)
            elif name[i + 1 : i + 2] == "`":  # a doubled backquote: one backquote in the name
                current.append("`")
                i += 1
            else:
                quoting = False
                if i + 1 < len(name) and name[i + 1] != ".":
                    raise syntax_error()
        elif char == "`":
            if current:
                raise syntax_error()
            quoting = True
        elif char == ".":
            if i == 0 or name[i - 1] == "." or i == len(name) - 1:
                raise syntax_error()
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    if quoting:
        raise syntax_error()
    parts.append("".join(current))
    return parts

"""Spark SQL's lexer for expressions, and its literals as Catalyst prints them.

The tokens Spark's grammar reads (names, backquoted names, strings with Spark's escapes
and doubled quotes, numbers with their type suffixes, operators, comments skipped), and
the ``toString`` of the literals they make: an integer as its value, a decimal as Java's
``BigDecimal`` prints it, a date or timestamp normalized, a binary as ``0x...``. Input
this module cannot read exactly raises ``ValueError``, which ``catalyst_text`` takes as
"leave it to Spark".
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from decimal import Decimal
from zoneinfo import ZoneInfo

# Token kinds.
WORD, QUOTED, STRING, NUMBER, OP, END = "word", "quoted", "string", "number", "op", "end"


@dataclass(frozen=True)
class Token:
    kind: str
    value: str  # a word as written, a quoted name or string unescaped, a number's text, an operator
    position: int


_OPERATORS = "<=> == <> != <= >= !< !> || < > = + - * / % & | ^ ~ !".split()  # longest first
_OPERATOR_CHARS = frozenset("<>=!|+-*/%&^~")
_NUMBER_LITERAL = re.compile(r"(?P<digits>\d+\.?\d*|\.\d+)(?P<exponent>[eE][+-]?\d+)?(?P<suffix>[bB][dD]|[lLsSyYdDfF])?")
_WORD_CHARS = re.compile(r"[A-Za-z0-9_]+")
_OCTAL = re.compile(r"[0-3][0-7]{2}")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_ESCAPED = {"0": "\u0000", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\u001a", "\\": "\\", "%": "\\%", "_": "\\_"}


def _unescape(body: str, quote: str) -> str:
    """Spark's ``unescapeSQLString`` on a literal's body: ``\\uXXXX``, octal ``\\ooo``,
    ``\\n`` and friends (``\\%`` and ``\\_`` keep their backslash, as in MySQL), and a
    doubled quote for one."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            if body[i + 1] == "u" and _HEX4.fullmatch(body, i + 2, i + 6):
                out.append(chr(int(body[i + 2 : i + 6], 16)))
                i += 6
            elif _OCTAL.fullmatch(body, i + 1, i + 4):
                out.append(chr(int(body[i + 1 : i + 4], 8)))
                i += 4
            elif body[i + 1] == "U":
                raise ValueError("\\U escape")
            else:
                out.append(_ESCAPED.get(body[i + 1], body[i + 1]))
                i += 2
        elif c == quote:  # the lexer only lets a quote in doubled
            out.append(quote)
            i += 2
        else:
            out.append(c)
            i += 1
    text = "".join(out)
    try:  # surrogate pairs from \uD83D\uDE00 make one character, as in Java
        return text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError as error:
        raise ValueError("a lone surrogate") from error


def tokens(text: str, escaped_string_literals: bool, double_quoted_identifiers: bool) -> list[Token]:
    tokens: list[Token] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0 or "/*" in text[i + 2 : end]:  # Spark nests bracketed comments
                raise ValueError("comment")
            i = end + 2
        elif c in "'\"":
            if c == '"' and double_quoted_identifiers:
                raise ValueError("spark.sql.ansi.doubleQuotedIdentifiers")
            j = i + 1
            while j < len(text):
                if text[j] == "\\":
                    j += 2
                elif text[j] == c:
                    if text.startswith(c, j + 1):
                        j += 2
                    else:
                        break
                else:
                    j += 1
            if j >= len(text):
                raise ValueError("unterminated string")
            body = text[i + 1 : j]
            if escaped_string_literals and ("\\" in body or c + c in body):
                raise ValueError("spark.sql.parser.escapedStringLiterals")
            tokens.append(Token(STRING, _unescape(body, c), i))
            i = j + 1
        elif c == "`":
            j = i + 1
            parts = []
            while True:
                end = text.find("`", j)
                if end < 0:
                    raise ValueError("unterminated quoted name")
                parts.append(text[j:end])
                if text.startswith("`", end + 1):
                    parts.append("`")
                    j = end + 2
                else:
                    break
            tokens.append(Token(QUOTED, "".join(parts), i))
            i = end + 1
        elif c.isdigit() or (c == "." and i + 1 < len(text) and text[i + 1].isdigit()):
            match = _NUMBER_LITERAL.match(text, i)
            assert match is not None
            end = match.end()
            if end < len(text) and (text[end].isalnum() or text[end] == "_"):
                raise ValueError("a name starting with a digit")
            tokens.append(Token(NUMBER, match.group(), i))
            i = end
        elif c.isascii() and (c.isalpha() or c == "_"):
            match = _WORD_CHARS.match(text, i)
            assert match is not None
            tokens.append(Token(WORD, match.group(), i))
            i = match.end()
        elif c in "(),.":
            tokens.append(Token(OP, c, i))
            i += 1
        elif c in _OPERATOR_CHARS:
            op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
            if op is None:
                raise ValueError(f"operator at {i}")
            tokens.append(Token(OP, op, i))
            i += len(op)
        else:
            raise ValueError(f"character {c!r}")
    tokens.append(Token(END, "", len(text)))
    return tokens


def _decimal_text(text: str) -> str:
    """A decimal literal as Spark's ``Decimal`` prints it: Java's ``BigDecimal.toString``,
    with a negative scale (``1E+2BD``) made 0."""
    value = Decimal(text)
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent > 0:
        value = value.quantize(Decimal(1))
    if value.is_zero():
        value = value.copy_abs()  # Java's BigDecimal has no negative zero
    if len(value.as_tuple().digits) > 38:
        raise ValueError("decimal precision over 38")
    return str(value)


_INTEGER_RANGES = {"l": 63, "s": 15, "y": 7}


def number_text(text: str, negative: bool) -> str:
    match = _NUMBER_LITERAL.fullmatch(text)
    assert match is not None
    digits, exponent, suffix = match.group("digits"), match.group("exponent"), (match.group("suffix") or "").lower()
    sign = "-" if negative else ""
    if suffix in _INTEGER_RANGES or (not suffix and "." not in digits and not exponent):
        if "." in digits or exponent:
            raise ValueError("an integer suffix on a fraction")
        value = -int(digits) if negative else int(digits)
        bits = _INTEGER_RANGES.get(suffix)
        if bits is not None and not -(1 << bits) <= value < (1 << bits):
            raise ValueError("an integer out of range")
        if bits is None and not -(1 << 63) <= value < (1 << 63) and len(str(abs(value))) > 38:
            raise ValueError("decimal precision over 38")
        return str(value)
    if suffix == "bd" or (not suffix and not exponent):
        return _decimal_text(sign + digits + (exponent or ""))
    # Doubles and floats print as the JVM's Double.toString / Float.toString, which before
    # Java 19 is not always the shortest form (4.9E-324): only the JVM knows its own.
    raise ValueError("double or float literal")


_DATE = re.compile(r"(\d{4})(?:-(\d{1,2})(?:-(\d{1,2})(?:[ T].*)?)?)?", re.DOTALL)
_TIMESTAMP = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,6}))?)?)?")


def date_text(value: str) -> str:
    match = _DATE.fullmatch(value.strip())
    if match is None:
        raise ValueError("date literal")
    year, month, day = (int(g) if g else 1 for g in match.groups())
    try:
        return datetime.date(year, month, day).isoformat()
    except ValueError as error:
        raise ValueError("date literal") from error


def timestamp_text(value: str, time_zone: str | None) -> str:
    """A timestamp literal without a zone, as Catalyst prints it in the session's zone: the
    same wall-clock time unless the zone skips it (then Spark moves it; so do we not)."""
    match = _TIMESTAMP.fullmatch(value.strip())
    if match is None:
        raise ValueError("timestamp literal")
    year, month, day, hour, minute, second = (int(g) if g else 0 for g in match.groups()[:6])
    fraction = match.group(7) or ""
    try:
        local = datetime.datetime(year, month, day, hour, minute, second)
    except ValueError as error:
        raise ValueError("timestamp literal") from error
    if time_zone is not None:
        try:
            zone = ZoneInfo(time_zone)
        except (ValueError, KeyError, OSError) as error:
            raise ValueError(f"time zone {time_zone}") from error
        if local.replace(tzinfo=zone).astimezone(datetime.UTC).astimezone(zone).replace(tzinfo=None) != local:
            raise ValueError("a wall-clock time the session's zone skips")
    fraction = fraction.ljust(6, "0").rstrip("0")
    return local.strftime("%Y-%m-%d %H:%M:%S") + (f".{fraction}" if fraction else "")


def binary_text(value: str) -> str:
    if not value or not re.fullmatch(r"[0-9a-fA-F]+", value):
        raise ValueError("binary literal")
    return "0x" + ("0" if len(value) % 2 else "") + value.upper()

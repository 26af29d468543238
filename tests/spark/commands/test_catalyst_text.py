"""Partition predicates printed as Catalyst prints them, checked against Spark's own parser.

delta-spark records OPTIMIZE's and REORG's predicates as the unresolved expression's
``toString``; ``catalyst_text`` reproduces it in Python. The oracle here is Spark's parser
in the test session's JVM: every predicate, hand-picked or generated, must print the same
and reference the same columns, or be left to Spark (``None``).
"""

from __future__ import annotations

import random

import pytest
from pyspark.sql import SparkSession

from sparkdelta.exceptions import DeltaAnalysisException
from sparkdelta.spark.commands.catalyst_text import parse_predicate
from sparkdelta.spark.commands.partition_predicates import parsed_predicate

RENDERED = [
    "key = 'a'",
    "p = 2",
    "p=1 AND q = 'x'",
    "p = 1 OR p = 2",
    "a = 1 AND b = 2 AND c = 3 AND d = 4",
    "a = 1 OR b = 2 OR c = 3 OR d = 4 OR e = 5",
    "a = 1 AND b = 2 OR c = 3 AND d = 4",
    "(p = 1 OR p = 2) AND (q = 1 OR q = 2) AND r = 3",
    "p = 1 AND q = 2 AND (r = 3 AND s = 4)",
    "NOT p = 1 AND q = 2",
    "NOT NOT p = 1",
    "!(p = 1)",
    "p IN (1, 2, 3)",
    "p NOT IN (1, 2)",
    "key IN ('a', \"b\")",
    "p > 1",
    "p >= 1",
    "p < 1",
    "p <= 1",
    "p != 1",
    "p <> 1",
    "p <=> NULL",
    "p == 1",
    "p IS NULL",
    "p IS NOT NULL",
    "NOT p IS NULL",
    "p = 1 IS NULL",
    "p IS TRUE",
    "p IS NOT FALSE",
    "p IS DISTINCT FROM 1",
    "p IS NOT DISTINCT FROM 1",
    "p BETWEEN 1 AND 3",
    "p NOT BETWEEN 1 AND 3 AND q = 1",
    "key LIKE 'a%'",
    "key NOT LIKE 'a%'",
    "key LIKE 'a#%' ESCAPE '#'",
    "key ILIKE 'a%'",
    "key RLIKE 'a.*'",
    "key NOT REGEXP 'a'",
    "d = '2020-01-01'",
    "d = DATE '2020-01-01'",
    "d = date '2020-1-1'",
    "DATE '2020' = d",
    "t = TIMESTAMP '2020-01-01 10:00:00'",
    "t = TIMESTAMP '2020-01-01'",
    "t = TIMESTAMP '2020-01-01T10:00:00.123000'",
    "t = TIMESTAMP_NTZ '2020-01-01 1:2:3'",
    "p = 1.5",
    "p = 0.10",
    "p = .5",
    "p = 1.",
    "p = -1",
    "p = - 1",
    "p = -0",
    "p = 007",
    "p = 1L",
    "p = 1S",
    "p = 1Y",
    "p = 100BD",
    "p = 1E+2BD",
    "p = 0.00000001",
    "p = 2147483648",
    "p = 9223372036854775808",
    "p = true",
    "p = null",
    "p = X'ab'",
    "p = x'abc'",
    'key = "a"',
    "key = 'it''s'",
    "key = 'a\\'b'",
    "key = 'a' 'b'",
    "key = 'tab\\there'",
    "key = 'uni\\u0041 \\101 \\0 \\Z \\% \\_ \\q'",
    "key = ''",
    'key = "a""b"',
    "lower(key) = 'a'",
    "LOWER(key) = 'a'",
    "`lower`(key) = 'a'",
    "coalesce(p, 0) = 1",
    "count(DISTINCT p) = 1",
    "count(ALL p) = 1",
    "db.f(x) = 1",
    "current_date() = d",
    "p = current_date",
    "`my col` = 1",
    "a.b = 1",
    "a.b.c = 1",
    "`a.b` = 1",
    "a.`b.c` = 1",
    "`a``b` = 1",
    "P = 1",
    "date = '2020-01-01'",
    "p + 1 = 2",
    "p > 1 + 2 * 3",
    "p % 2 = 0",
    "p DIV 2 = 1",
    "p & 1 = 1",
    "p | 1 = 1",
    "p ^ 1 = 1",
    "~p = 1",
    "+p = 1",
    "p = -p * 2",
    "p = -(p)",
    "p = - - 1",
    "a || b || c = 'x'",
    "p = 1 = true",
    "cast(p AS int) = 1",
    "cast(p AS INTEGER) = 1",
    "cast(p AS long) = 1",
    "cast(p AS decimal) = 1",
    "cast(p AS dec(5)) = 1",
    "cast(p AS numeric(5, 1)) = 1",
    "cast(p AS varchar(3)) = '1'",
    "cast(p AS timestamp_ltz) = t",
    "p = 1 -- a comment",
    "p = 1 /* a comment */ AND q = 2",
    "p IN (" + ", ".join(str(i) for i in range(40)) + ")",
]

LEFT_TO_SPARK = [
    "p = 1.5D",
    "p = 1e3",
    "p = 1.0E7",
    "p = 1.5F",
    "(p, q) IN ((1, 2))",
    "p IN (SELECT 1)",
    "p = substring(k, 1, 2)",
    "p LIKE ANY ('a', 'b')",
    "p IS UNKNOWN",
    "first(p) = 1",
    "try_cast(p AS int) = 1",
    "count(*) = 1",
    "CASE WHEN p = 1 THEN true ELSE false END",
    "p = INTERVAL 1 DAY",
    "TIMESTAMP '2020-01-01 10:00:00+01:00' = t",
    "exists(a, x -> x > 1)",
    "s.a[0] = 1",
    "1a = 2",
]


def _spark_parse(spark: SparkSession, text: str) -> tuple[str, tuple[str, ...]]:
    """Spark's parser's answer: the expression's ``toString`` and its attributes' dotted names."""
    expression = spark._jsparkSession.sessionState().sqlParser().parseExpression(text)
    names: list[str] = []
    attributes = expression.references().iterator()
    while attributes.hasNext():
        name = str(attributes.next().nameParts().mkString("."))
        if name not in names:
            names.append(name)
    return str(expression.toString()), tuple(names)


@pytest.mark.classic_only  # the oracle is Spark's JVM parser
@pytest.mark.parametrize("text", RENDERED)
def test_predicates_print_as_spark_prints_them(spark: SparkSession, text: str) -> None:
    parsed = parse_predicate(text, time_zone=spark.conf.get("spark.sql.session.timeZone"))
    assert parsed is not None, "rendered in Python, not left to Spark"
    assert (parsed.text, parsed.references) == _spark_parse(spark, text)


@pytest.mark.classic_only  # the oracle is Spark's JVM parser
@pytest.mark.parametrize("text", LEFT_TO_SPARK)
def test_what_python_does_not_render_is_recorded_as_written(spark: SparkSession, text: str) -> None:
    """No API of a Spark Connect session prints Catalyst's unresolved form: these forms are
    recorded as written, their column names still read as Spark's parser reads them."""
    assert parse_predicate(text) is None
    if "SELECT" not in text:
        parsed = parsed_predicate(spark, text)
        assert (parsed.text, parsed.references) == (text, _spark_parse(spark, text)[1])


def test_predicates_spark_rejects_are_not_rendered(spark: SparkSession) -> None:
    for text in ("p = 128Y", "p = 1e400", "p = 1.5L", "p = ", "p = (1", "p = 'open"):
        assert parse_predicate(text) is None, text
        with pytest.raises(DeltaAnalysisException, match="DELTA_FAILED_RECOGNIZE_PREDICATE"):
            parsed_predicate(spark, text)


def test_a_timestamp_the_session_zone_skips_is_left_to_spark() -> None:
    assert parse_predicate("t = TIMESTAMP '2024-03-10 02:30:00'", time_zone="America/Los_Angeles") is None
    parsed = parse_predicate("t = TIMESTAMP '2024-03-10 03:30:00'", time_zone="America/Los_Angeles")
    assert parsed is not None and parsed.text == "('t = 2024-03-10 03:30:00)"


def _random_value(rng: random.Random, depth: int) -> str:
    atoms = [
        lambda: rng.choice(["p", "q", "`a b`", "s.x", "`x.y`", "Key"]),
        lambda: str(rng.choice([0, 1, -7, 42, 2147483648, -9223372036854775808])),
        lambda: rng.choice(["1.5", "-0.25", "10.00", "7L", "-3S", "12BD", "1E+1BD"]),
        lambda: rng.choice(["'a'", "'it''s'", '"q"', "'x\\ty'", "''", "'%_'"]),
        lambda: rng.choice(["DATE '2021-02-03'", "TIMESTAMP '2021-02-03 04:05:06.7'", "true", "null", "X'0f'"]),
    ]
    if depth <= 0 or rng.random() < 0.4:
        return rng.choice(atoms)()
    kind = rng.randrange(5)
    if kind == 0:
        return f"{_random_value(rng, depth - 1)} {rng.choice(['+', '-', '*', '/', '%', '||', '&', '|', '^', 'DIV'])} {_random_value(rng, depth - 1)}"
    if kind == 1:
        return f"{rng.choice(['-', '~', '+'])}{_random_value(rng, depth - 1)}"
    if kind == 2:
        args = ", ".join(_random_value(rng, depth - 1) for _ in range(rng.randrange(0, 3)))
        return f"{rng.choice(['upper', 'coalesce', 'concat', 'abs'])}({args})"
    if kind == 3:
        return f"cast({_random_value(rng, depth - 1)} AS {rng.choice(['int', 'string', 'date', 'decimal(4,2)', 'bigint'])})"
    return f"({_random_value(rng, depth - 1)})"


def _random_predicate(rng: random.Random, depth: int) -> str:
    value = lambda: _random_value(rng, 2)  # noqa: E731
    kind = rng.randrange(9 if depth > 0 else 6)
    if kind == 0:
        return f"{value()} {rng.choice(['=', '==', '<', '<=', '>', '>=', '<=>', '<>', '!='])} {value()}"
    if kind == 1:
        return f"{value()} {rng.choice(['IN', 'NOT IN'])} ({', '.join(value() for _ in range(rng.randrange(1, 4)))})"
    if kind == 2:
        return f"{value()} {rng.choice(['BETWEEN', 'NOT BETWEEN'])} {value()} AND {value()}"
    if kind == 3:
        pattern = rng.choice(["'a%'", "'_b'", "p"])
        return f"{value()} {rng.choice(['LIKE', 'NOT LIKE', 'ILIKE', 'RLIKE'])} {pattern}"
    if kind == 4:
        return f"{value()} IS {rng.choice(['NULL', 'NOT NULL', 'TRUE', 'NOT FALSE', 'DISTINCT FROM 1'])}"
    if kind == 5:
        return value()
    if kind == 6:
        return f"NOT {_random_predicate(rng, depth - 1)}"
    if kind == 7:
        return f"({_random_predicate(rng, depth - 1)})"
    joined = f" {rng.choice(['AND', 'OR', 'and', 'or'])} "
    return joined.join(_random_predicate(rng, depth - 1) for _ in range(rng.randrange(2, 5)))


@pytest.mark.classic_only  # the oracle is Spark's JVM parser
def test_generated_predicates_print_as_spark_prints_them(spark: SparkSession) -> None:
    rng = random.Random(20240611)
    rendered = 0
    for _ in range(400):
        text = _random_predicate(rng, 3)
        parsed = parse_predicate(text, time_zone=spark.conf.get("spark.sql.session.timeZone"))
        if parsed is None:
            continue
        rendered += 1
        assert (parsed.text, parsed.references) == _spark_parse(spark, text), text
    assert rendered >= 380

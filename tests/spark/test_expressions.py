"""sparkdelta's Python reading of Spark conditions (``spark/expressions``), on either kind of session.

Oracles: the kernel predicates the JVM-walking translation produced (pinned here), the
history text delta-spark records (Catalyst's ``Expression.sql``, from Spark itself), and
Spark's own ``Cast.canUpCast`` for the cast table.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
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
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from sparkdelta.kernel import skipping as S
from sparkdelta.spark.expressions import Relation, resolve_condition
from sparkdelta.spark.expressions.spark_types import can_up_cast

SCHEMA = StructType(
    [
        StructField("id", LongType()),
        StructField("i", IntegerType()),
        StructField("s", StringType()),
        StructField("d", DateType()),
        StructField("t", TimestampType()),
        StructField("x", DoubleType()),
        StructField("m", DecimalType(10, 2)),
        StructField("st", StructType([StructField("a", IntegerType()), StructField("Bb", StringType())])),
        StructField("Mixed", IntegerType()),
    ]
)
UTC = dt.UTC


def col(*path: str) -> S.Column:
    return S.Column(path)


def cmp(op: str, column: S.Column, value: object) -> S.Compare:
    return S.Compare(op, column, S.Literal(value))


# (condition, kernel predicate, Catalyst's analyzed SQL) under session time zone America/New_York.
TEXT_CASES = [
    ("id = 5", cmp("=", col("id"), 5), "(id = CAST(5 AS BIGINT))"),
    ("id > 5 and s = 'a'", S.And(cmp(">", col("id"), 5), cmp("=", col("s"), "a")), "((id > CAST(5 AS BIGINT)) AND (s = 'a'))"),
    ("i = 5L", cmp("=", col("i"), 5), "(CAST(i AS BIGINT) = 5L)"),
    ("s like 'ab%'", S.StartsWith(col("s"), "ab"), "s LIKE 'ab%'"),
    ("s like 'a_%'", None, "s LIKE 'a_%'"),
    ("s not like 'ab%'", S.Not(S.StartsWith(col("s"), "ab")), "(NOT s LIKE 'ab%')"),  # sqlglot: Like(negate=True)
    ("d >= '2024-01-02'", cmp(">=", col("d"), dt.date(2024, 1, 2)), "(d >= CAST('2024-01-02' AS DATE))"),
    ("d = DATE '2024-01-02'", cmp("=", col("d"), dt.date(2024, 1, 2)), "(d = DATE '2024-01-02')"),
    (
        "t < '2024-01-02 03:04:05'",
        cmp("<", col("t"), dt.datetime(2024, 1, 2, 8, 4, 5, tzinfo=UTC)),
        "(t < CAST('2024-01-02 03:04:05' AS TIMESTAMP))",
    ),
    (
        "t = TIMESTAMP '2024-01-02 03:04:05.5'",
        cmp("=", col("t"), dt.datetime(2024, 1, 2, 8, 4, 5, 500000, tzinfo=UTC)),
        "(t = TIMESTAMP '2024-01-02 03:04:05.5')",
    ),
    ("x < 1", cmp("<", col("x"), 1.0), "(x < CAST(1 AS DOUBLE))"),
    ("m = 1.5", cmp("=", col("m"), Decimal("1.5")), "(m = CAST(1.5BD AS DECIMAL(10,2)))"),
    ("st.a = 1", cmp("=", col("st", "a"), 1), "(st.`a` = 1)"),
    ("mixed = 1", cmp("=", col("Mixed"), 1), "(mixed = 1)"),
    ("id between 1 and 5", S.And(cmp(">=", col("id"), 1), cmp("<=", col("id"), 5)), "between(id, 1, 5)"),
    ("not (id <=> 1)", None, "(NOT (id <=> CAST(1 AS BIGINT)))"),
    ("s is not null", S.IsNull(col("s"), negated=True), "(s IS NOT NULL)"),
    ("i = '5'", cmp("=", col("i"), 5), "(CAST(i AS BIGINT) = CAST('5' AS BIGINT))"),
    ("s = 5", None, "(CAST(s AS BIGINT) = CAST(5 AS BIGINT))"),
    ("id = 1 or upper(s) = 'A'", None, "((id = CAST(1 AS BIGINT)) OR (upper(s) = 'A'))"),
    ("id = 1 and upper(s) = 'A'", cmp("=", col("id"), 1), "((id = CAST(1 AS BIGINT)) AND (upper(s) = 'A'))"),
    ("d = '2024-1-2'", None, "(d = CAST('2024-1-2' AS DATE))"),
    ("m > 2", cmp(">", col("m"), Decimal(2)), "(m > CAST(CAST(2 AS DECIMAL(1,0)) AS DECIMAL(10,2)))"),
    (
        "id in (1, 2, 3)",
        S.In(col("id"), (S.Literal(1), S.Literal(2), S.Literal(3))),
        "(CAST(id AS BIGINT) IN (CAST(1 AS BIGINT), CAST(2 AS BIGINT), CAST(3 AS BIGINT)))",
    ),
    ("nope = 1", None, None),
]


@pytest.fixture
def new_york(spark: SparkSession):  # type: ignore[no-untyped-def]
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    yield spark
    spark.conf.unset("spark.sql.session.timeZone")


@pytest.mark.parametrize(("condition", "predicate", "sql"), TEXT_CASES, ids=[c[0] for c in TEXT_CASES])
def test_sql_text(new_york: SparkSession, condition: str, predicate: S.Predicate | None, sql: str | None) -> None:
    resolved = resolve_condition(new_york, condition, SCHEMA)
    assert resolved.predicate() == predicate
    assert resolved.sql() == sql


COLUMN_CASES = [
    (lambda: F.col("id") == 5, cmp("=", col("id"), 5), "(id = CAST(5 AS BIGINT))"),
    (lambda: F.col("d") >= F.lit(dt.date(2024, 1, 2)), cmp(">=", col("d"), dt.date(2024, 1, 2)), "(d >= DATE '2024-01-02')"),
    (
        lambda: F.col("t") < F.lit(dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        cmp("<", col("t"), dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        "(t < TIMESTAMP '2024-01-01 22:04:05')",
    ),
    (lambda: F.col("i").isin(1, 2), S.In(col("i"), (S.Literal(1), S.Literal(2))), "(i IN (1, 2))"),
    (lambda: ~F.col("s").isNull(), S.Not(S.IsNull(col("s"))), "(NOT (s IS NULL))"),
    (lambda: F.col("st")["Bb"] == "x", cmp("=", col("st", "Bb"), "x"), "(st.`Bb` = 'x')"),
    (lambda: F.col("s").startswith("ab"), S.StartsWith(col("s"), "ab"), "startswith(s, 'ab')"),
    (lambda: F.col("i").cast("long") == 2**40, cmp("=", col("i"), 2**40), "(CAST(i AS BIGINT) = 1099511627776L)"),
    (
        lambda: F.expr("i > 1 and s like 'x%'"),
        S.And(cmp(">", col("i"), 1), S.StartsWith(col("s"), "x")),
        "((i > 1) AND s LIKE 'x%')",
    ),
    (lambda: F.col("x") == 1.5, cmp("=", col("x"), 1.5), "(x = 1.5D)"),
    (lambda: F.lit(3) < F.col("i"), cmp(">", col("i"), 3), "(3 < i)"),
]


@pytest.mark.parametrize(("make", "predicate", "sql"), COLUMN_CASES, ids=[str(i) for i in range(len(COLUMN_CASES))])
def test_columns(new_york: SparkSession, make, predicate: S.Predicate | None, sql: str | None) -> None:  # type: ignore[no-untyped-def]
    resolved = resolve_condition(new_york, make(), SCHEMA)
    assert resolved.predicate() == predicate
    assert resolved.sql() == sql


def test_aliases_and_references(spark: SparkSession) -> None:
    target = StructType([StructField("RideId", LongType()), StructField("p", StringType())])
    source = StructType([StructField("RideId", LongType()), StructField("v", IntegerType())])
    relations = [Relation(target, "target"), Relation(source, "source")]
    resolved = resolve_condition(spark, "target.RideId = source.RideId and p = 'a'", relations)
    assert resolved.sql() == "((target.RideId = source.RideId) AND (target.p = 'a'))"
    assert [(c.qualifier, c.path) for c in resolved.references() or []] == [
        ("target", ("RideId",)),
        ("source", ("RideId",)),
        ("target", ("p",)),
    ]
    assert resolve_condition(spark, "RideId = 1", relations).references() is None  # ambiguous


def test_collated_strings_are_not_in_byte_order(spark: SparkSession) -> None:
    """``STRING COLLATE UTF8_LCASE`` compares case-blind: 'A' LIKE 'a%', which min/max in byte
    order would rule out (found by test_expression_fuzz.py)."""
    schema = StructType([StructField("c", StringType("UTF8_LCASE"))])
    for condition in ["c LIKE 'a%'", "startswith(c, 'a')", "c = 'a'", "c IN ('a', 'b')", "c > 'a'"]:
        assert resolve_condition(spark, condition, schema).predicate() is None, condition
    assert resolve_condition(spark, F.col("c").startswith("a"), schema).predicate() is None
    assert resolve_condition(spark, "c IS NULL", schema).predicate() == S.IsNull(col("c"))


def test_legacy_mode_prints_no_text_coercion(spark: SparkSession) -> None:
    """Outside ANSI mode the analyzer casts text against other types otherwise (``d IN
    ('2024-04-18 00:00:00')`` compares as text), so the printed SQL, which ``overwrite``
    evaluates, must not carry ANSI's casts (found by test_expression_fuzz.py)."""
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        assert resolve_condition(spark, "d IN ('2024-04-18 00:00:00', TIMESTAMP '2024-03-09 12:00:00')", SCHEMA).sql() is None
        assert resolve_condition(spark, "i = '5'", SCHEMA).sql() is None
        assert resolve_condition(spark, "id = 5", SCHEMA).sql() == "(id = CAST(5 AS BIGINT))"
        assert resolve_condition(spark, "s = 'a'", SCHEMA).sql() == "(s = 'a')"
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")


def test_case_sensitivity(spark: SparkSession) -> None:
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        assert resolve_condition(spark, "mixed = 1", SCHEMA).predicate() is None
        assert resolve_condition(spark, "Mixed = 1", SCHEMA).predicate() == cmp("=", col("Mixed"), 1)
    finally:
        spark.conf.unset("spark.sql.caseSensitive")


# Spark's Cast.canUpCast, case by case (checked against the JVM in test_can_up_cast_matches_spark).
UP_CASTS: list[tuple[DataType, DataType, bool]] = [
    (IntegerType(), LongType(), True),
    (LongType(), IntegerType(), False),
    (ByteType(), ShortType(), True),
    (LongType(), FloatType(), True),
    (FloatType(), DoubleType(), True),
    (DoubleType(), FloatType(), False),
    (IntegerType(), DecimalType(10, 0), True),
    (IntegerType(), DecimalType(9, 0), False),
    (LongType(), DecimalType(20, 0), True),
    (LongType(), DecimalType(19, 0), False),
    (DecimalType(5, 2), DecimalType(7, 3), True),
    (DecimalType(5, 2), DecimalType(5, 3), False),
    (DecimalType(9, 0), IntegerType(), True),
    (DecimalType(11, 0), IntegerType(), False),
    (DecimalType(5, 0), IntegerType(), True),
    (DecimalType(5, 2), DoubleType(), False),
    (DoubleType(), DecimalType(38, 10), False),
    (DateType(), TimestampType(), True),
    (DateType(), TimestampNTZType(), True),
    (TimestampType(), DateType(), False),
    (TimestampType(), LongType(), True),
    (LongType(), TimestampType(), True),
    (IntegerType(), TimestampType(), False),
    (IntegerType(), StringType(), True),
    (BinaryType(), StringType(), True),
    (BooleanType(), StringType(), True),
    (StringType(), IntegerType(), False),
    (StringType(), BinaryType(), False),
    (NullType(), DateType(), True),
    (BooleanType(), IntegerType(), False),
    (ArrayType(IntegerType(), False), ArrayType(LongType(), True), True),
    (ArrayType(IntegerType(), True), ArrayType(LongType(), False), False),
    (MapType(StringType(), IntegerType()), MapType(StringType(), LongType()), True),
    (
        StructType([StructField("a", IntegerType())]),
        StructType([StructField("b", LongType())]),
        True,
    ),
    (
        StructType([StructField("a", IntegerType())]),
        StructType([StructField("a", LongType()), StructField("b", LongType())]),
        False,
    ),
]


@pytest.mark.parametrize(
    ("source", "target", "expected"), UP_CASTS, ids=[f"{s.simpleString()}->{t.simpleString()}" for s, t, _ in UP_CASTS]
)
def test_can_up_cast(source: DataType, target: DataType, expected: bool) -> None:
    assert can_up_cast(source, target) is expected


@pytest.mark.classic_only
def test_can_up_cast_matches_spark(spark: SparkSession) -> None:
    """The table above is Spark's own answer (the JVM's ``Cast.canUpCast``)."""
    session, jvm = spark._jsparkSession, spark._jvm
    assert session is not None and jvm is not None
    cast = jvm.org.apache.spark.sql.catalyst.expressions.Cast
    for source, target, expected in UP_CASTS:
        jvm_answer = bool(cast.canUpCast(session.parseDataType(source.json()), session.parseDataType(target.json())))
        assert jvm_answer is expected, (source, target)

"""Random predicates, read by sparkdelta's expression translation, checked against Spark itself.

A seeded generator builds typed predicates over a small table (numbers, decimals, awkward
strings, dates, timestamps, booleans, NULLs; comparisons across types, casts, IN, BETWEEN,
LIKE, nesting), each as SQL text and as the equivalent pyspark Column. Oracles, all Spark's
own evaluation of the predicate over the table's rows (a few queries for them all):

- skipping soundness: a file the kernel predicate prunes (``snapshot.scan``, the very
  predicate ``filter`` would use) holds no row for which Spark finds the predicate TRUE;
- SQL round trip: the text ``analyzed_sql`` prints evaluates, row by row, to the same
  value (TRUE, FALSE or NULL) as the original;
- Column vs text: Spark evaluates both forms alike (a check of the generator), and both
  forms prune soundly.

The table is a real Delta table written by sparkdelta, partitioned on int, string,
timestamp and double columns (NULL, NaN, -0.0 among them), its data files clustered so
that min/max stats prune; the session is in New York time, its spring-forward night in
the data. Both of Spark's modes run: ANSI (the default) and legacy, whose implicit casts
between text and other types differ.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from sparkdelta.kernel import Table
from sparkdelta.spark.expressions import resolve_condition
from sparkdelta.spark.read.predicates import condition_predicate, table_schema
from sparkdelta.spark.read.scan import scan_info

ZONE = "America/New_York"
TZ = ZoneInfo(ZONE)
UTC = dt.UTC
# A deeper hunt: FUZZ_SEEDS=40 FUZZ_LEGACY_SEEDS=20 (about 3 minutes on 2 cores).
SEEDS = range(int(os.environ.get("FUZZ_SEEDS", "6")))
LEGACY_SEEDS = range(100, 100 + int(os.environ.get("FUZZ_LEGACY_SEEDS", "2")))
PER_SEED = 60

SCHEMA = StructType(
    [
        StructField("rid", LongType()),
        StructField("l", LongType()),
        StructField("i", IntegerType()),
        StructField("x", DoubleType()),
        StructField("m", DecimalType(10, 2)),
        StructField("s", StringType()),
        StructField("d", DateType()),
        StructField("t", TimestampType()),
        StructField("b", BooleanType()),
        StructField("p", IntegerType()),
        StructField("q", StringType()),
        StructField("c", StringType("UTF8_LCASE")),  # compares case-blind: not in the stats' byte order
        StructField("pt", TimestampType()),  # partition columns, as are p and q
        StructField("px", DoubleType()),
    ]
)
TYPES = {f.name: f.dataType.simpleString() for f in SCHEMA.fields}
GROUPS, ROWS_PER_GROUP, APPENDS = 15, 4, 3

# Sorted, so that groups of neighbours make files with narrow string ranges.
STRINGS = sorted(
    [
        "",
        " lead",
        "%",
        "100%",
        "O'Reilly",
        "Z",
        "_",
        "_x",
        "a",
        "a%b",
        "a_b",
        "ab",
        "abc",
        "back\\slash",
        "it's",
        "new\nline",
        "tab\t",
        "z" * 40,
        "z" * 32 + "a",
        "z" * 32 + "ü",
        "z" * 33 + "😀",
        "ü",
        "ünï",
        "日本",
        "😀",
        "😀x",
    ]
)
CASED = sorted(["A", "AB", "Ab", "B", "IT'S", "It's", "Z", "a", "aB", "ab", "b", "it's", "z", "Ü", "ÜNÏ", "ü", "ünï", ""])
PARTITION_INTS = [0, 1, 2, None, 7]
PARTITION_STRINGS = ["a", "b%", "ünï", None, "it's"]


def _rows() -> list[tuple[Any, ...]]:
    """Rows clustered by group; each group is written as one file (see ``table``)."""
    rows = []
    base_t = dt.datetime(2024, 3, 9, 12, 0, 0, 123456, tzinfo=UTC)  # New York's spring-forward night follows
    for g in range(GROUPS):
        for k in range(ROWS_PER_GROUP):
            rid = g * ROWS_PER_GROUP + k
            last = k == ROWS_PER_GROUP - 1
            l_ = None if g % 4 == 0 and last else g * 10 + 2 * k
            i = None if g % 6 == 1 else g * 7 - 50 + k
            x: float | None = g * 1.5 - 10 + k * 0.25
            if g == 3 and k == 1:
                x = math.nan
            if g == 5:
                x = [-0.0, 0.0, -0.0, None][k]
            if g == 7 and k >= 2:
                x = [math.inf, -math.inf][k - 2]
            if g == 9 and last:
                x = None
            m = None if g == 2 else (Decimal(g * 3 + k) / 4 - 5).quantize(Decimal("0.01"))
            s = (
                None
                if g == 4 and k == 0
                else STRINGS[(g * 3 + k) % len(STRINGS)]
                if g < 12
                else STRINGS[(g + k * 5) % len(STRINGS)]
            )
            d = None if g == 6 else dt.date(2024, 2, 20) + dt.timedelta(days=g * 5 + k)
            if g == 0 and k == 0:
                d = dt.date(1969, 12, 31)
            t = None if g == 8 and k < 2 else base_t + dt.timedelta(hours=g * 3, minutes=k * 17, microseconds=k * 7)
            b = None if g == 10 else (k % 2 == 0 if g % 3 else True)
            c = None if g == 11 and k == 2 else CASED[(g + k) % len(CASED)]
            partition = (PARTITION_INTS[g % 5], PARTITION_STRINGS[(g + g // 5) % 5])
            pt = None if g % 7 == 3 else base_t + dt.timedelta(hours=g * 2 - 6, microseconds=g)
            px = [1.5, math.nan, -0.0, None, 0.0, -2.25, math.inf][g % 7]
            rows.append((rid, l_, i, x, m, s, d, t, b, *partition, c, pt, px))
    return rows


ROWS = _rows()


def _column_values(name: str) -> list[Any]:
    index = SCHEMA.fieldNames().index(name)
    return [r[index] for r in ROWS if r[index] is not None]


# --------------------------------------------------------------------------- literals


@dataclass(frozen=True)
class Lit:
    """A literal: its SQL spelling, the Column building it, and its Spark type."""

    sql: str
    column: Callable[[], Column]
    type: str  # "string-number", "string-date", "string-timestamp": text a cast reads as one


def _sql_string(text: str, rng: random.Random) -> str:
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    if rng.random() < 0.5:
        escaped = escaped.replace("\n", "\\n").replace("\t", "\\t")
    return f"'{escaped}'"


def _float_sql(value: float, rng: random.Random) -> str:
    if math.isnan(value) or math.isinf(value):
        special = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return f"CAST('{special}' AS DOUBLE)"
    return rng.choice([f"{value!r}D", f"{value:e}", f"CAST({value!r} AS DOUBLE)"])


def _timestamp_sql(moment: dt.datetime, rng: random.Random) -> str:
    local = moment.astimezone(TZ)
    choice = rng.random()
    if choice < 0.6 or moment.microsecond:
        return f"TIMESTAMP '{local.strftime('%Y-%m-%d %H:%M:%S.%f')}'"
    if choice < 0.8:
        return f"TIMESTAMP '{moment.strftime('%Y-%m-%d %H:%M:%S')}Z'"
    return f"TIMESTAMP '{local.strftime('%Y-%m-%d %H:%M:%S')}'"


def _near(values: list[Any], rng: random.Random, step: Any) -> Any:
    value = rng.choice(values)
    return value + rng.choice([-step, step]) if rng.random() < 0.4 else value


def eval_arithmetic(column: Column, shape: str) -> Column:
    return column + 1 if shape == "+ 1" else column * 2


class Gen:
    """Random predicates from one seed."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def literal(self, kind: str, column: str | None) -> Lit:  # noqa: C901 - one case per type
        """A literal meeting an operand of Spark type ``kind`` (a column's values when given)."""
        rng = self.rng
        if rng.random() < 0.06:
            if rng.random() < 0.5:
                return Lit("NULL", lambda: F.lit(None), "null")
            return Lit(f"CAST(NULL AS {kind.upper()})", lambda: F.lit(None).cast(kind), kind)
        pool = _column_values(column) if column in TYPES else []
        if kind in ("bigint", "int", "tinyint"):
            value = (
                int(_near(pool or list(range(-60, 150)), rng, 1)) if pool and isinstance(pool[0], int) else rng.randint(-60, 150)
            )
            form = rng.choice(["int", "int", "long", "double", "decimal", "string", "big"])
            if form == "int":
                return Lit(str(value), lambda: F.lit(value), "int")
            if form == "long":
                return Lit(f"{value}L", lambda: F.lit(value).cast("bigint"), "bigint")
            if form == "big":
                big = rng.choice([2**31, -(2**31) - 1, 2**40])
                return Lit(str(big), lambda: F.lit(big), "bigint")
            if form == "double":
                number = value + rng.choice([0.0, 0.5, -0.5])
                return Lit(_float_sql(number, rng), lambda: F.lit(number), "double")
            if form == "decimal":
                dec = Decimal(value) + rng.choice([Decimal("0"), Decimal("0.5"), Decimal("-0.25")])
                text = f"{dec}" if "." in f"{dec}" else f"{dec}.0"
                return Lit(text, lambda: F.lit(Decimal(text)), "decimal")
            text = rng.choice([str(value), f"+{value}", f"0{value}", f" {value}", f"{value}.0", f"{value}e0"])
            return Lit(_sql_string(text, rng), lambda: F.lit(text), "string-number")
        if kind in ("double", "float"):
            number = float(_near(pool, rng, 0.25)) if pool and isinstance(pool[0], float) else rng.uniform(-12, 12)
            if rng.random() < 0.1:
                number = rng.choice([math.nan, math.inf, -math.inf, -0.0, 0.0])
            number = round(number, 2) if math.isfinite(number) else number
            form = rng.choice(["double", "double", "int", "decimal", "string"])
            if form == "int" and math.isfinite(number):
                whole = int(number)
                return Lit(str(whole), lambda: F.lit(whole), "int")
            if form == "decimal" and math.isfinite(number):
                text = f"{Decimal(str(number)):.2f}"
                return Lit(text, lambda: F.lit(Decimal(text)), "decimal")
            if form == "string" and math.isfinite(number):
                text = repr(number)
                return Lit(_sql_string(text, rng), lambda: F.lit(text), "string-number")
            return Lit(_float_sql(number, rng), lambda: F.lit(number), "double")
        if kind.startswith("decimal"):
            dec = (
                _near(pool, rng, Decimal("0.25"))
                if pool and isinstance(pool[0], Decimal)
                else Decimal(rng.randint(-800, 800)) / 100
            )
            form = rng.choice(["decimal", "decimal", "int", "double", "bd"])
            if form == "int":
                whole = int(dec)
                return Lit(str(whole), lambda: F.lit(whole), "int")
            if form == "double":
                number = float(dec)
                return Lit(_float_sql(number, rng), lambda: F.lit(number), "double")
            text = f"{dec}"
            suffix = "BD" if form == "bd" else ""
            return Lit(text + suffix, lambda: F.lit(Decimal(text)), "decimal")
        if kind == "string":
            text = rng.choice(STRINGS + CASED + [str(v) for v in pool] + ["b", "zz", "ab%", "a\\%"])
            return Lit(_sql_string(text, rng), lambda: F.lit(text), "string")
        if kind == "date":
            day = _near(pool, rng, dt.timedelta(days=1)) if pool and isinstance(pool[0], dt.date) else dt.date(2024, 3, 1)
            form = rng.choice(["date", "string", "timestamp", "timestamp-string"])
            if form == "date":
                return Lit(f"DATE '{day.isoformat()}'", lambda: F.lit(day), "date")
            if form == "string":
                text = rng.choice([day.isoformat(), day.isoformat(), f" {day.isoformat()}", f"{day.isoformat()}T00:00"])
                return Lit(f"'{text}'", lambda: F.lit(text), "string-date")
            moment = dt.datetime(day.year, day.month, day.day, rng.choice([0, 0, 12]), tzinfo=TZ).astimezone(UTC)
            if form == "timestamp":
                return Lit(_timestamp_sql(moment, rng), lambda: F.lit(moment), "timestamp")
            text = moment.astimezone(TZ).strftime("%Y-%m-%d %H:%M:%S")
            return Lit(f"'{text}'", lambda: F.lit(text), "string-timestamp")
        if kind == "timestamp":
            if pool and isinstance(pool[0], dt.datetime):
                moment = rng.choice(pool) + rng.choice(
                    [dt.timedelta(0), dt.timedelta(microseconds=1), -dt.timedelta(microseconds=1)]
                )
                moment = moment + rng.choice([dt.timedelta(0), dt.timedelta(0), dt.timedelta(hours=1), -dt.timedelta(minutes=30)])
            else:
                moment = dt.datetime(2024, 3, 10, 7, 30, tzinfo=UTC)
            form = rng.choice(["timestamp", "timestamp", "string", "date", "date-string"])
            if form == "timestamp":
                return Lit(_timestamp_sql(moment, rng), lambda: F.lit(moment), "timestamp")
            if form == "string":
                local = moment.astimezone(TZ)
                text = rng.choice(
                    [
                        local.strftime("%Y-%m-%d %H:%M:%S.%f"),
                        local.strftime("%Y-%m-%dT%H:%M"),
                        moment.strftime("%Y-%m-%d %H:%M:%S+00:00"),
                        "2024-03-10 02:30:00",  # New York skips this hour
                        "2024-03-10 01:59:59.999999",
                        "2024-03-10 03:00:00",
                    ]
                )
                return Lit(f"'{text}'", lambda: F.lit(text), "string-timestamp")
            day = moment.astimezone(TZ).date()
            if form == "date":
                return Lit(f"DATE '{day.isoformat()}'", lambda: F.lit(day), "date")
            return Lit(f"'{day.isoformat()}'", lambda: F.lit(day.isoformat()), "string-date")
        if kind == "boolean":
            flag = rng.random() < 0.5
            if rng.random() < 0.2:
                return Lit(f"'{str(flag).lower()}'", lambda: F.lit(str(flag).lower()), "string")
            return Lit(str(flag).lower(), lambda: F.lit(flag), "boolean")
        raise AssertionError(kind)

    # Casts per source type that Spark's ANSI mode evaluates without errors on this data.
    CASTS = {
        "bigint": ["int", "double", "decimal(20,0)", "string", "decimal(12,2)"],
        "int": ["bigint", "double", "decimal(10,0)", "string", "float", "decimal(5,0)"],
        "double": ["float", "string"],
        "decimal(10,2)": ["double", "bigint", "int", "decimal(12,2)", "decimal(5,1)", "string", "decimal(20,4)"],
        "date": ["timestamp", "string", "timestamp_ntz"],
        "timestamp": ["date", "string", "timestamp_ntz"],
        "boolean": ["int", "string"],
        "string": ["string"],
    }

    def operand(self) -> tuple[str, Callable[[], Column], str, str | None]:
        """A column, maybe cast: its SQL, its Column, its type, and the column's name."""
        rng = self.rng
        name = rng.choice([f.name for f in SCHEMA.fields if f.name != "rid"])
        kind = TYPES[name].split(" ")[0]  # "string collate UTF8_LCASE": a string
        spelled = rng.choice([name, name, name.upper(), f"`{name}`"])  # names resolve case-blind
        sql, column = spelled, (lambda: F.col(spelled))
        if kind in ("bigint", "int") and rng.random() < 0.08:  # arithmetic: no column bound
            shape = rng.choice(["+ 1", "* 2", "neg"])
            if shape == "neg":
                return f"-{spelled}", lambda: -F.col(spelled), kind, None
            return f"{spelled} {shape}", lambda: eval_arithmetic(F.col(spelled), shape), kind, None
        if rng.random() < 0.15:
            target = rng.choice(self.CASTS[kind])
            sql, column = f"CAST({spelled} AS {target.upper()})", (lambda: F.col(spelled).cast(target))
            kind = "timestamp" if target == "timestamp_ntz" else target
            return sql, column, kind, None if target not in ("double", "bigint", "int") else name
        return sql, column, kind, name

    def leaf(self) -> tuple[str, Callable[[], Column]]:  # noqa: C901 - one case per operator
        rng = self.rng
        sql, column, kind, name = self.operand()
        if kind == "timestamp_ntz":
            kind = "timestamp"
        choice = rng.random()
        if choice < 0.4:
            lit = self.literal(kind, name)
            op = rng.choice(["=", "<>", "<", "<=", ">", ">=", "<=>", "=="])
            ops: dict[str, Callable[[Column, Column], Column]] = {
                "=": lambda a, b: a == b,
                "==": lambda a, b: a == b,
                "<>": lambda a, b: a != b,
                "<": lambda a, b: a < b,
                "<=": lambda a, b: a <= b,
                ">": lambda a, b: a > b,
                ">=": lambda a, b: a >= b,
                "<=>": lambda a, b: a.eqNullSafe(b),
            }
            fn = ops[op]
            if rng.random() < 0.3:  # literal on the left
                return f"{lit.sql} {op} {sql}", lambda: fn(lit.column(), column())
            return f"{sql} {op} {lit.sql}", lambda: fn(column(), lit.column())
        if choice < 0.55:
            lits = [self.literal(kind, name) for _ in range(rng.randint(1, 4))]
            negated = rng.random() < 0.4
            text = f"{sql} {'NOT ' if negated else ''}IN ({', '.join(lit.sql for lit in lits)})"

            def isin() -> Column:
                result = column().isin(*[lit.column() for lit in lits])
                return ~result if negated else result

            return text, isin
        if choice < 0.65:
            negated = rng.random() < 0.5
            return f"{sql} IS {'NOT ' if negated else ''}NULL", lambda: column().isNotNull() if negated else column().isNull()
        if choice < 0.75:
            low, high = self.literal(kind, name), self.literal(kind, name)
            negated = rng.random() < 0.3
            text = f"{sql} {'NOT ' if negated else ''}BETWEEN {low.sql} AND {high.sql}"

            def between() -> Column:
                result = column().between(low.column(), high.column())
                return ~result if negated else result

            return text, between
        if choice < 0.9:
            subject = rng.choice(["s", "q", "c", "c"])
            base = rng.choice(STRINGS + CASED + ["a", "ab", "z", "zzzz", "ü", "😀", "it"])
            base = base[: rng.randint(0, len(base))].replace("\\", "")  # a backslash escapes in LIKE
            form = rng.random()
            if form < 0.15:
                return f"startswith({subject}, {_sql_string(base, rng)})", lambda: F.col(subject).startswith(base)
            pattern = base + rng.choice(["%", "%", "", "_", "%a%", "_%"])
            negated = rng.random() < 0.3
            escaped = _sql_string(pattern, rng)

            def like() -> Column:
                result = F.col(subject).like(pattern)
                return ~result if negated else result

            return f"{subject} {'NOT ' if negated else ''}LIKE {escaped}", like
        if choice < 0.92:
            other = {"bigint": "i", "int": "l", "double": "m", "string": "q", "date": "t", "timestamp": "d"}.get(kind)
            if other is not None:
                op = rng.choice(["=", "<", ">=", "<=>"])
                ops2: dict[str, Callable[[Column, Column], Column]] = {
                    "=": lambda a, b: a == b,
                    "<": lambda a, b: a < b,
                    ">=": lambda a, b: a >= b,
                    "<=>": lambda a, b: a.eqNullSafe(b),
                }
                return f"{sql} {op} {other}", lambda: ops2[op](column(), F.col(other))
        if choice < 0.95:
            flag = rng.random() < 0.5
            return ("b" if flag else "NOT b"), lambda: F.col("b") if flag else ~F.col("b")
        # shapes the translation cannot use: arithmetic, functions
        value = rng.randint(0, 3)
        if rng.random() < 0.5:
            return f"l % 4 = {value}", lambda: F.col("l") % 4 == value
        letter = rng.choice(["A", "AB", "Z"])
        return f"upper(s) >= '{letter}'", lambda: F.upper(F.col("s")) >= letter

    def predicate(self, depth: int = 0) -> tuple[str, Callable[[], Column]]:
        rng = self.rng
        if depth >= 3 or rng.random() < 0.45:
            return self.leaf()
        choice = rng.random()
        if choice < 0.2:
            sql, column = self.predicate(depth + 1)
            return f"NOT ({sql})", lambda: ~column()
        left, right = self.predicate(depth + 1), self.predicate(depth + 1)
        if choice < 0.6:
            return f"({left[0]}) AND ({right[0]})", lambda: left[1]() & right[1]()
        return f"({left[0]}) OR ({right[0]})", lambda: left[1]() | right[1]()


# --------------------------------------------------------------------------- the table


@dataclass
class Fixture:
    path: str
    source: DataFrame
    file_of_row: dict[int, int]  # row id -> index of its file in the snapshot's files
    snapshot: Any
    num_files: int


@pytest.fixture(scope="module")
def zone(spark: SparkSession):  # type: ignore[no-untyped-def]
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", ZONE)
    yield spark
    spark.conf.set("spark.sql.session.timeZone", previous)


@pytest.fixture(scope="module")
def table(zone: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    spark = zone
    path = str(tmp_path_factory.mktemp("fuzz") / "t")
    per_append = GROUPS // APPENDS
    for a in range(APPENDS):
        rows = [r for r in ROWS if a * per_append <= r[0] // ROWS_PER_GROUP < (a + 1) * per_append]
        # Within an append every group has its own partition, hence its own file.
        spark.createDataFrame(rows, SCHEMA).coalesce(1).write.format("delta").mode("append").partitionBy(
            "p", "q", "pt", "px"
        ).save(path)
    snapshot = Table(path).snapshot()
    names = snapshot.files.column("path").to_pylist()  # relative, as the file URIs end
    located = spark.read.format("delta").load(path).select("rid", F.col("_metadata.file_path").alias("f")).collect()
    file_of_row = {}
    for r in located:
        (index,) = [n for n, name in enumerate(names) if r.f.endswith("/" + name)]
        file_of_row[r.rid] = index
    assert sorted(file_of_row) == [r[0] for r in ROWS]
    assert len(names) == GROUPS  # one file a group: clustered stats
    source = spark.createDataFrame(ROWS, SCHEMA)
    stored = spark.read.format("delta").load(path).select(*SCHEMA.fieldNames())
    assert sorted(map(_comparable, stored.collect())) == sorted(map(_comparable, source.collect()))  # Spark judges these rows
    return Fixture(path, source, file_of_row, snapshot, len(names))


# --------------------------------------------------------------------------- Spark's answers


def _evaluate(source: DataFrame, columns: dict[str, Column]) -> dict[str, list[Any]] | None:
    """Spark's value of each expression on each row (by row id), or None when Spark refuses one."""
    try:
        rows = source.select("rid", *[c.alias(k) for k, c in columns.items()]).orderBy("rid").collect()
    except Exception:
        return None
    return {k: [r[k] for r in rows] for k in columns}


def evaluate(source: DataFrame, columns: dict[str, Column], chunk: int = 120) -> dict[str, list[Any] | None]:
    """Spark's values of many expressions in few queries: halves on a failure, down to the culprit."""
    if len(columns) > chunk:
        keys = list(columns)
        found: dict[str, list[Any] | None] = {}
        for start in range(0, len(keys), chunk):
            found.update(evaluate(source, {k: columns[k] for k in keys[start : start + chunk]}, chunk))
        return found
    values = _evaluate(source, columns) if columns else {}
    if values is not None:
        return dict(values)
    if len(columns) == 1:
        return dict.fromkeys(columns)
    keys = list(columns)
    half = len(keys) // 2
    return {
        **evaluate(source, {k: columns[k] for k in keys[:half]}, chunk),
        **evaluate(source, {k: columns[k] for k in keys[half:]}, chunk),
    }


@dataclass
class Case:
    sql: str
    column: Column
    printed: str | None


def cases(spark: SparkSession, schema: StructType, seeds: range) -> list[Case]:
    found = []
    for seed in seeds:
        gen = Gen(seed)
        for _ in range(PER_SEED):
            sql, column = gen.predicate()
            found.append(Case(sql, column(), resolve_condition(spark, sql, schema).sql()))
    return found


def _kept(table: Fixture, spark: SparkSession, condition: str | Column) -> list[bool] | None:
    predicate = condition_predicate(spark, table_schema(table.snapshot), condition)
    if predicate is None:
        return None
    return table.snapshot.scan(predicate).selection.to_pylist()


@pytest.fixture(params=["ansi", "legacy"])
def mode(request: pytest.FixtureRequest, zone: SparkSession):  # type: ignore[no-untyped-def]
    """Spark's ANSI mode (its default) and the legacy one, whose implicit casts differ."""
    zone.conf.set("spark.sql.ansi.enabled", str(request.param == "ansi").lower())
    yield request.param
    zone.conf.unset("spark.sql.ansi.enabled")


def test_random_predicates_prune_soundly_and_print_equivalent_sql(zone: SparkSession, table: Fixture, mode: str) -> None:
    spark = zone
    schema = table_schema(table.snapshot)
    all_cases = cases(spark, schema, SEEDS if mode == "ansi" else LEGACY_SEEDS)
    columns: dict[str, Column] = {}
    for n, case in enumerate(all_cases):
        columns[f"t{n}"] = F.expr(case.sql)
        columns[f"c{n}"] = case.column
        if case.printed is not None:
            columns[f"r{n}"] = F.expr(case.printed)
    values = evaluate(table.source, columns)
    row_ids = [r[0] for r in ROWS]
    problems: list[str] = []
    refused, pruning = 0, 0
    for n, case in enumerate(all_cases):
        text_values = values[f"t{n}"]
        if text_values is None:  # Spark refuses it (an ANSI cast error on this data, say)
            refused += 1
            continue
        if values[f"c{n}"] != text_values:
            problems.append(f"generator: Column differs from text {case.sql!r}")
        if case.printed is not None and values[f"r{n}"] != text_values:
            problems.append(f"round trip: {case.sql!r} printed {case.printed!r}: {text_values} vs {values[f'r{n}']}")
        matching_files = {table.file_of_row[rid] for rid, v in zip(row_ids, text_values, strict=True) if v is True}
        masks = {"text": _kept(table, spark, case.sql), "column": _kept(table, spark, case.column)}
        for form, kept in masks.items():
            if kept is None:
                continue
            pruned_matching = [f for f in matching_files if not kept[f]]
            if pruned_matching:
                predicate = condition_predicate(spark, schema, case.sql if form == "text" else case.column)
                problems.append(f"unsound ({form}): {case.sql!r} -> {predicate} pruned files {pruned_matching} holding matches")
        if any(kept is not None and not all(kept) for kept in masks.values()):
            pruning += 1
    assert not problems, "\n".join(problems)
    assert refused <= len(all_cases) // 10, f"Spark refused {refused} of {len(all_cases)} predicates"
    assert pruning >= len(all_cases) // 10, f"only {pruning} of {len(all_cases)} predicates prune anything"


# Simple predicates that must prune, read end to end (``filter`` on a Delta read), and
# regressions the generator found.
PRUNING = [
    ("l = 42", 1),
    ("l >= 140", 1),
    ("i < -40", 4),  # files whose i is all NULL have no bounds: kept
    ("x <= -9.5D", 3),  # a NaN and an -Infinity file: kept
    ("d = DATE '2024-03-06'", 2),
    ("t > TIMESTAMP '2024-03-11 02:00:00'", 1),
    ("s LIKE 'ab%'", 5),
    ("p = 1", 3),
    ("q = 'it\\'s'", 3),
    ("p IS NULL AND l > 100", 1),
    ("NOT (l < 140)", 1),
    # regressions: a case-blind collation is no byte order, so LIKE and startswith prune nothing
    ("c LIKE 'a%'", GROUPS),
    ("startswith(c, 'Z')", GROUPS),
]


@pytest.mark.parametrize(("condition", "max_files"), PRUNING, ids=[c for c, _ in PRUNING])
def test_simple_predicates_prune_and_keep_the_rows(zone: SparkSession, table: Fixture, condition: str, max_files: int) -> None:
    result = zone.read.format("delta").load(table.path).where(condition)
    info = scan_info(result)
    assert info is not None and info.files_total == table.num_files
    assert 0 < info.files_read <= max_files
    expected = sorted(map(_comparable, table.source.where(condition).collect()))
    assert sorted(map(_comparable, result.select(*SCHEMA.fieldNames()).collect())) == expected


def _comparable(row: Any) -> tuple[Any, ...]:
    """A row whose NaNs compare equal (rows sort by their unique rid, first)."""
    return tuple(repr(v) if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in row)

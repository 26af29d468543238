"""Raw NYC-yellow-taxi-like trips, one CSV file per day, dirty the way real feeds are.

Everything is computed in Spark from ``spark.range`` with values hashed from (seed, day,
row, salt), so a day's file is the same on every run and on any number of executors,
and tens of millions of rows never pass through the driver. Distributions follow the
real feed's shape: pickups peak in the evening, a few Manhattan zones and the airports
dominate, distances are log-normal (airport runs ~17 miles), fares follow the meter
(or JFK's flat fare) and tips are recorded for card payments only.

Each ride gets one *kind*: clean, or one kind of dirt. Duplicated rides appear twice
(the copy near the end of the file); corrected rides appear again later with new amounts
(in the same file, or late, in the next day's file); the four bad kinds are malformed in
one field and are named after the quarantine reason silver should give them. Since the
kinds come from the same hashes, :func:`injected` can count them without reading the
files, which the tests use as the oracle for the pipeline's counts.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .trips import FEED_COLUMNS, LATE_COLUMNS, MONEY, TYPED_COLUMNS
from .warehouse import Location, storage_at

BAD_KINDS = ("missing_ride_id", "bad_timestamp", "bad_number", "negative_amount")
KINDS = ("clean", "duplicate", "corrected", *BAD_KINDS)

# Ride ids are day-major so a day's rides form one key range (data skipping in MERGE).
RIDES_PER_DAY_LIMIT = 1_000_000_000

# Share of pickups per hour of day, roughly as in the 2019 yellow taxi data.
HOUR_WEIGHTS = [
    3.0,
    2.2,
    1.6,
    1.1,
    0.9,
    1.0,
    2.0,
    3.5,
    4.3,
    4.4,
    4.4,
    4.6,
    4.9,
    5.0,
    5.3,
    5.4,
    5.2,
    5.9,
    6.6,
    6.4,
    5.8,
    5.6,
    5.3,
    4.3,
]
# The busiest pickup zones (mostly Manhattan), most popular first; weights fall off as a power law.
BUSY_ZONES = [237, 161, 236, 162, 230, 186, 142, 170, 48, 234, 163, 239, 79, 141, 68, 107, 263, 140, 238, 164]
BUSY_ZONES += [249, 100, 90, 113, 43, 246, 137, 229, 233, 114]
JFK, LAGUARDIA = 132, 138
ZONES = 263  # 264 and 265 are "unknown" in the TLC zone map
CABS = 13_587  # medallions
PASSENGERS = [(1, 0.70), (2, 0.14), (3, 0.04), (4, 0.02), (5, 0.05), (6, 0.03), (0, 0.02)]
PAYMENTS = [(1, 0.68), (2, 0.30), (3, 0.01), (4, 0.01)]


@dataclass(frozen=True)
class FeedSpec:
    """What the feed looks like: its size, seed, calendar and how dirty it is."""

    rows_per_day: int = 200_000
    seed: int = 42
    start: date = date(2024, 1, 1)
    congestion_from: int = 3  # ordinal of the first day whose file has CongestionSurcharge
    duplicate_rate: float = 0.01
    correction_rate: float = 0.01
    bad_rate: float = 0.008  # split evenly over the four bad kinds

    def __post_init__(self) -> None:
        if not 0 < self.rows_per_day < RIDES_PER_DAY_LIMIT:
            raise ValueError(f"rows per day must be between 1 and {RIDES_PER_DAY_LIMIT - 1}")
        if self.duplicate_rate + self.correction_rate + self.bad_rate >= 1:
            raise ValueError("duplicate, correction and bad rates must add up to less than 1")

    def day(self, ordinal: int) -> date:
        return self.start + timedelta(days=ordinal)

    def file_name(self, ordinal: int) -> str:
        return f"trips_{self.day(ordinal).isoformat()}.csv"


@dataclass
class Injected:
    """What the generator put into a set of day files, by kind (the pipeline's expected counts)."""

    lines: int = 0  # data lines in the files
    rides: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))  # by kind
    duplicates: int = 0  # extra copies of duplicated rides
    corrections: int = 0  # correction lines emitted

    @property
    def bad(self) -> dict[str, int]:
        return {kind: self.rides[kind] for kind in BAD_KINDS}

    @property
    def valid_rides(self) -> int:
        """Rides that should end up in silver: all but the bad ones."""
        return sum(self.rides.values()) - sum(self.bad.values())


class _Draws:
    """SQL text for one day's random draws, hashed from (seed, day, row id, salt).

    The generator is written as SQL text, a stage per ``selectExpr``: building the plan
    from Column objects cost a py4j call per operator, thousands per day, which made
    planning slower than generating on small days.
    """

    def __init__(self, spec: FeedSpec, day: int) -> None:
        self.seed, self.day = spec.seed, day

    def u(self, salt: int) -> str:
        """A uniform double in [0, 1)."""
        return f"(CAST(xxhash64({self.seed}, {self.day}, id, {salt}) & {(1 << 53) - 1} AS DOUBLE) / {float(1 << 53)!r})"

    def pick(self, salt: int, weighted: Iterable[tuple[int, float]], resolution: int = 256) -> str:
        """A value of ``weighted`` drawn by inverse CDF over ``resolution`` buckets.

        A lookup in a constant array, not a CASE chain: Spark inlines these into every
        expression that uses them, and chains of dozens of branches made it several times slower.
        """
        pairs = list(weighted)
        total = sum(w for _, w in pairs)
        table: list[int] = []
        edge = 0.0
        for value, weight in pairs:
            edge += weight / total
            while len(table) < resolution and (len(table) + 0.5) / resolution < edge:
                table.append(value)
        table += [pairs[-1][0]] * (resolution - len(table))
        values = ",".join(str(v) for v in table)
        return f"element_at(array({values}), CAST(FLOOR({self.u(salt)} * {resolution}) AS INT) + 1)"

    def kind(self, spec: FeedSpec) -> str:
        share = spec.bad_rate / len(BAD_KINDS)
        edges = [("duplicate", spec.duplicate_rate), ("corrected", spec.correction_rate)] + [(k, share) for k in BAD_KINDS]
        cases, edge = [], 0.0
        for kind, rate in edges:
            edge += rate
            cases.append(f"WHEN {self.u(0)} < {edge!r} THEN '{kind}'")
        return f"CASE {' '.join(cases)} ELSE 'clean' END"


def _money(expression: str) -> str:
    return f"CAST(round({expression}, 2) AS {MONEY.simpleString()})"


def rides(spark: SparkSession, spec: FeedSpec, day: int) -> DataFrame:
    """One day's rides, typed and clean, with their ``kind`` and whether a correction comes ``late``."""
    d = _Draws(spec, day)
    midnight = int(datetime.combine(spec.day(day), datetime.min.time(), UTC).timestamp())
    weekday = "TRUE" if spec.day(day).weekday() < 5 else "FALSE"
    zones = [(zone, 1 / (i + 1) ** 0.8) for i, zone in enumerate(BUSY_ZONES)]
    airports = f"({JFK}, {LAGUARDIA})"

    df = spark.range(spec.rows_per_day).selectExpr(
        "id",
        f"{d.kind(spec)} AS kind",
        f"{d.u(1)} < 0.5 AS late",
        f"{d.pick(2, enumerate(HOUR_WEIGHTS))} AS hour",
        f"CASE WHEN {d.u(13)} < 0.04 THEN IF({d.u(12)} < 0.6, {JFK}, {LAGUARDIA}) WHEN {d.u(13)} < 0.70 THEN {d.pick(10, zones)}"
        f" ELSE CAST(FLOOR({d.u(11)} * {ZONES}) + 1 AS INT) END AS PickupLocationId",
    )
    df = df.selectExpr(
        "*",
        f"CASE WHEN PickupLocationId IN {airports} THEN {d.pick(14, zones)}"
        f" WHEN {d.u(15)} < 0.05 THEN IF({d.u(16)} < 0.5, {JFK}, {LAGUARDIA})"
        f" WHEN {d.u(15)} < 0.70 THEN {d.pick(17, zones)} ELSE CAST(FLOOR({d.u(18)} * {ZONES}) + 1 AS INT) END AS DropLocationId",
    )
    at_airport = f"(PickupLocationId IN {airports} OR DropLocationId IN {airports})"
    z = f"(sqrt(-2 * ln(greatest({d.u(20)}, 1e-12))) * cos({2 * math.pi!r} * {d.u(21)}))"  # Box-Muller
    # Log-normal around 1.7 miles; airport runs around 17.
    distance = f"IF({at_airport}, least(greatest(17 + 4 * {z}, 8.0), 30.0), least(greatest(exp({math.log(1.7)!r} + 0.75 * {z}), 0.1), 30.0))"
    rush, night = "(hour BETWEEN 7 AND 9 OR hour BETWEEN 16 AND 19)", "(hour >= 22 OR hour < 6)"
    speed = f"(CASE WHEN {rush} THEN 8 + 6 * {d.u(22)} WHEN {night} THEN 16 + 8 * {d.u(22)} ELSE 10 + 7 * {d.u(22)} END + IF({at_airport}, 6, 0))"
    df = df.selectExpr(
        "*",
        f"CAST(round({distance}, 2) AS {TYPED_COLUMNS['TripDistance'].simpleString()}) AS TripDistance",
        f"timestamp_seconds({midnight} + hour * 3600 + FLOOR({d.u(3)} * 3600)) AS PickupTime",
        f"CASE WHEN PickupLocationId = {JFK} OR DropLocationId = {JFK} THEN 2 WHEN {d.u(23)} < 0.005 THEN 5 ELSE 1 END AS RateCodeId",
        f"{d.pick(24, PAYMENTS)} AS PaymentType",
    )
    df = df.selectExpr("*", f"CAST(TripDistance AS DOUBLE) / {speed} * 60 + 1 + 3 * {d.u(25)} AS minutes")
    # The meter: $2.50 flag drop, $2.50 a mile, 50 cents per slow minute-ish; JFK is flat, rate 5 negotiated.
    fare = f"CASE RateCodeId WHEN 2 THEN 52.0 WHEN 5 THEN FLOOR(40 + 80 * {d.u(26)}) ELSE 2.5 + 2.5 * CAST(TripDistance AS DOUBLE) + 0.5 * FLOOR(minutes * 0.25) END"
    extra = f"CASE WHEN hour >= 20 OR hour < 6 THEN 0.5 WHEN {weekday} AND hour BETWEEN 16 AND 19 THEN 1.0 ELSE 0.0 END"
    tolls = f"CASE WHEN {at_airport} AND {d.u(27)} < 0.5 THEN 6.12 WHEN {d.u(27)} < 0.03 THEN 6.12 ELSE 0.0 END"
    congestion = (
        _money(f"IF({d.u(29)} < 0.9, 2.5, 0.0)") if day >= spec.congestion_from else f"CAST(NULL AS {MONEY.simpleString()})"
    )
    df = df.selectExpr(
        "*",
        "timestamp_seconds(unix_timestamp(PickupTime) + CAST(round(minutes * 60) AS BIGINT)) AS DropTime",
        f"{_money(f'round(({fare}) * 2) / 2')} AS FareAmount",
        f"{_money(extra)} AS Extra",
        f"{_money('0.5')} AS MtaTax",
        f"{_money(tolls)} AS TollsAmount",
        f"{_money('0.3')} AS ImprovementSurcharge",
        f"{congestion} AS CongestionSurcharge",
        f"CAST({(day + 1) * RIDES_PER_DAY_LIMIT} AS BIGINT) + id AS RideId",
        f"IF({d.u(30)} < 0.42, 1, 2) AS VendorId",
        f"concat('T', CAST(FLOOR({d.u(31)} * {CABS}) + 100000 AS STRING), 'C') AS CabNumber",
        f"CAST(FLOOR({d.u(32)} * 20000) + 5000000 AS STRING) AS DriverLicenseNumber",
        f"{d.pick(33, PASSENGERS)} AS PassengerCount",
    )
    # Some riders never tip; the others tip 15-30% of the fare, a little more at night. Cash tips go unrecorded.
    tip_share = f"IF({d.u(34)} < 0.08, 0.0, 0.15 + 0.15 * {d.u(35)} + IF({night}, 0.03, 0.0))"
    df = df.selectExpr("*", f"{_money(f'IF(PaymentType = 1, FareAmount * {tip_share}, 0.0)')} AS TipAmount")
    return _with_total(df.drop("minutes"))


def _with_total(df: DataFrame) -> DataFrame:
    parts = " + ".join(
        ["FareAmount", "Extra", "MtaTax", "TipAmount", "TollsAmount", "ImprovementSurcharge", "coalesce(CongestionSurcharge, 0)"]
    )
    return df.withColumn("TotalAmount", F.expr(f"CAST({parts} AS {MONEY.simpleString()})"))


def _corrections(spec: FeedSpec, rides_of_day: DataFrame, day: int) -> DataFrame:
    """The corrected rides again, with a toll added that was missed and a re-keyed card tip."""
    new_tip = _money(f"FareAmount * (0.10 + 0.2 * {_Draws(spec, day).u(40)})")
    corrected = rides_of_day.where("kind = 'corrected'").withColumns(
        {
            "TollsAmount": F.expr(_money("TollsAmount + 6.12")),
            "TipAmount": F.expr(f"IF(PaymentType = 1, {new_tip}, TipAmount)"),
        }
    )
    return _with_total(corrected)


def _as_text(df: DataFrame, columns: list[str]) -> DataFrame:
    """The feed's text rendering: timestamps as ``yyyy-MM-dd HH:mm:ss``, numbers as Spark prints them."""
    rendered = [
        f"date_format({c}, 'yyyy-MM-dd HH:mm:ss') AS {c}" if c in ("PickupTime", "DropTime") else f"CAST({c} AS STRING) AS {c}"
        for c in columns
    ]
    return df.selectExpr("id", "kind", *rendered)


def _dirty(spec: FeedSpec, text: DataFrame, day: int) -> DataFrame:
    """Break one field of each bad ride, as its kind says."""
    u = _Draws(spec, day).u(50)
    broken_time = (
        f"CASE WHEN {u} < 0.34 THEN 'N/A' WHEN {u} < 0.67 THEN date_format(to_timestamp(PickupTime), 'MM/dd/yyyy HH:mm')"
        " ELSE concat(substring(PickupTime, 1, 11), '25', substring(PickupTime, 14, 6)) END"
    )
    broken_total = f"IF({u} < 0.5, '#VALUE!', replace(TotalAmount, '.', ','))"
    negative_total = f"CAST(CAST(CAST(TotalAmount AS {MONEY.simpleString()}) - 2 * CAST(FareAmount AS {MONEY.simpleString()}) AS {MONEY.simpleString()}) AS STRING)"
    return text.withColumns(
        {
            "RideId": F.expr("IF(kind = 'missing_ride_id', CAST(NULL AS STRING), RideId)"),
            "PickupTime": F.expr(f"IF(kind = 'bad_timestamp', {broken_time}, PickupTime)"),
            "TotalAmount": F.expr(
                f"CASE kind WHEN 'bad_number' THEN {broken_total} WHEN 'negative_amount' THEN {negative_total} ELSE TotalAmount END"
            ),
            "FareAmount": F.expr("IF(kind = 'negative_amount', concat('-', FareAmount), FareAmount)"),
        }
    )


def columns_of_day(spec: FeedSpec, day: int) -> list[str]:
    """The header of a day's file: CongestionSurcharge appears from ``congestion_from`` on."""
    return list(FEED_COLUMNS) + (list(LATE_COLUMNS) if day >= spec.congestion_from else [])


def day_lines(spark: SparkSession, spec: FeedSpec, day: int) -> DataFrame:
    """A day's file as text columns, in file order: the rides, the duplicate copies, late corrections
    of yesterday's rides, then today's corrections (so a correction always follows its ride)."""
    columns = columns_of_day(spec, day)
    today = rides(spark, spec, day)
    parts = [_dirty(spec, _as_text(today, columns), day), _as_text(today.where("kind = 'duplicate'"), columns)]
    if day > 0:
        yesterday = _corrections(spec, rides(spark, spec, day - 1), day - 1)
        parts.append(_as_text(yesterday.where("late"), columns))
    parts.append(_as_text(_corrections(spec, today, day).where("NOT late"), columns))
    lines = parts[0]
    for part in parts[1:]:
        lines = lines.unionByName(part)  # union keeps the parts' order once coalesced to one partition
    return lines.drop("id", "kind")


MAX_CONCURRENT_DAYS = 32
"""Days' jobs in flight at once: a bound on driver threads, not on the cluster's work."""


def write_day(spark: SparkSession, spec: FeedSpec, day: int, landing: Location) -> Location:
    """Write a day's file as ``landing/trips_<date>.csv``, appearing whole when complete
    (a rename on disk, a copy on an object store: either way readers never see a partial file)."""
    target = landing / spec.file_name(day)
    staging = landing / f"_writing_{target.stem}"
    # One file per day, as the feed delivers it; coalesce keeps the rows in order without a sort.
    day_lines(spark, spec, day).coalesce(1).write.mode("overwrite").option("header", True).csv(staging.spark_path)
    storage, staged = storage_at(staging)
    written = list(storage.list_tree(staged, lambda name: False))
    (part,) = [f for f in written if f.name.startswith("part-") and f.name.endswith(".csv")]
    storage.move(part.path, storage_at(target)[1])
    for _ in storage.delete_many(f.path for f in written if f is not part):
        pass
    storage.delete_empty_directory(staged)
    return target


def generate(
    spark: SparkSession, spec: FeedSpec, landing: Location | str | os.PathLike[str], days: Iterable[int]
) -> list[Location]:
    """Write the given days' files (day ordinals counted from ``spec.start``).

    A day's file is written by one task (it is one file, in order), so the days' jobs are
    submitted together (up to ``MAX_CONCURRENT_DAYS``) and Spark's scheduler runs as many
    at once as the cluster has cores.
    """
    folder = Location.of(landing)
    days = list(days)
    with ThreadPoolExecutor(max_workers=max(1, min(MAX_CONCURRENT_DAYS, len(days)))) as pool:
        return list(pool.map(lambda day: write_day(spark, spec, day, folder), days))


def injected(spark: SparkSession, spec: FeedSpec, days: Iterable[int]) -> Injected:
    """Count what the files of ``days`` contain, by kind, from the generator's own hashes."""
    days = sorted(set(days))
    counts = Injected()
    for day in days:
        by_kind = {
            (row["kind"], row["late"]): row["count"] for row in rides(spark, spec, day).groupBy("kind", "late").count().collect()
        }
        for (kind, _late), n in by_kind.items():
            counts.rides[kind] += n
        counts.duplicates += sum(n for (kind, _), n in by_kind.items() if kind == "duplicate")
        counts.corrections += by_kind.get(("corrected", False), 0)
        if day > 0:
            yesterday = rides(spark, spec, day - 1).where("kind = 'corrected' AND late").count()
            counts.corrections += yesterday
    counts.lines = sum(counts.rides.values()) + counts.duplicates + counts.corrections
    return counts

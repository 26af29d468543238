"""Typing bronze's text and deciding, per row, whether it is a valid trip or why not.

Casts are ``try_`` casts (Spark runs with ANSI on: a plain cast would fail the job on the
first "#VALUE!"), so a malformed value becomes null and the row gets a reason. Reasons
are checked in a fixed order and a row gets the first that applies. Valid rows satisfy
silver's CHECK constraints by construction; the constraints are the safety net.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, TimestampType

from .trips import MONEY_COLUMNS, REQUIRED_NUMBERS, TIMESTAMP_FORMAT, TYPED_COLUMNS

REASONS = {
    "missing_ride_id": "RideId is missing or not an integer",
    "bad_timestamp": "a pickup or drop time is missing, malformed, or the drop precedes the pickup",
    "bad_number": "a required number is missing, or a number is malformed",
    "negative_amount": "an amount, the distance or the passenger count is negative",
}

REASON = "_reason"


def raw(df: DataFrame, name: str) -> Column:
    """A feed column as text; null when the file predates the column."""
    return F.col(name) if name in df.columns else F.lit(None).cast(StringType())


def typed_value(df: DataFrame, name: str) -> Column:
    kind = TYPED_COLUMNS[name]
    text = F.trim(raw(df, name))
    if isinstance(kind, TimestampType):
        return F.try_to_timestamp(text, F.lit(TIMESTAMP_FORMAT))
    if isinstance(kind, StringType):
        return text
    return text.try_cast(kind)


def checked(df: DataFrame) -> DataFrame:
    """``df`` (bronze rows) with a typed ``t_<column>`` per feed column and ``_reason`` (null when valid)."""
    typed = {name: typed_value(df, name) for name in TYPED_COLUMNS}
    out = df.select("*", *[value.alias(f"t_{name}") for name, value in typed.items()])

    def t(name: str) -> Column:
        return F.col(f"t_{name}")

    malformed = [raw(out, n).isNotNull() & t(n).isNull() for n in TYPED_COLUMNS if n not in ("RideId", "PickupTime", "DropTime")]
    missing = [t(n).isNull() for n in REQUIRED_NUMBERS]
    negative = [t(n) < 0 for n in [*MONEY_COLUMNS, "TripDistance", "PassengerCount"]]
    reason = (
        F.when(t("RideId").isNull(), F.lit("missing_ride_id"))
        .when(t("PickupTime").isNull() | t("DropTime").isNull() | (t("DropTime") < t("PickupTime")), F.lit("bad_timestamp"))
        .when(_any(malformed + missing), F.lit("bad_number"))
        .when(_any([F.coalesce(c, F.lit(False)) for c in negative]), F.lit("negative_amount"))
    )
    return _evaluated_once(out.withColumn(REASON, reason))


def _evaluated_once(df: DataFrame) -> DataFrame:
    """``df`` behind an optimizer barrier, so the casts run once per row.

    Spark pushes a filter on ``_reason`` below the projection that computes it and then
    evaluates every cast twice (in the filter and in the projection): half the time of
    silver went there. A Generate node (exploding a one-element array) stops the pushdown.
    """
    return df.select(F.inline(F.array(F.struct(*[F.col(f"`{c}`") for c in df.columns]))))


def _any(conditions: list[Column]) -> Column:
    result = conditions[0]
    for condition in conditions[1:]:
        result = result | condition
    return result

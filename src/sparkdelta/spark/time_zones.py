"""Timestamps as a Spark user means them: text without an offset is in the session time zone.

delta-spark reads ``timestampAsOf`` and ``startingTimestamp`` with Spark's cast, which
takes the session time zone; the kernel takes instants, so text is resolved here first.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

from pyspark.sql import SparkSession

from ..exceptions import DeltaAnalysisException
from ..kernel.table import parse_timestamp


def zone(time_zone: str) -> tzinfo:
    """A Spark session time zone: a region id (``Europe/Paris``) or an offset (``+02:00``, ``UTC-5``)."""
    if time_zone.strip().upper() in ("Z", "UTC", "GMT"):
        return UTC
    offset = re.fullmatch(r"(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?", time_zone.strip())
    if offset:
        sign = -1 if offset.group(1) == "-" else 1
        return timezone(sign * timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3) or 0)))
    return ZoneInfo(time_zone.strip())


def session_zone(spark: SparkSession) -> tzinfo:
    return zone(str(spark.conf.get("spark.sql.session.timeZone", "UTC")))


def session_instant(spark: SparkSession, value: str | datetime | int | None) -> datetime | int | None:
    """``value`` as an instant: text and naive datetimes in the session time zone; millis and aware datetimes as given."""
    if isinstance(value, str):
        try:
            value = parse_timestamp(value)
        except ValueError as error:
            raise DeltaAnalysisException(
                f"The provided timestamp ('{value}') cannot be converted to a valid timestamp.", "DELTA_TIMESTAMP_INVALID"
            ) from error
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=session_zone(spark))
    return value

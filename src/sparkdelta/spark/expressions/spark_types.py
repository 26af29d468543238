"""Spark's type rules that expression analysis needs, in Python: which casts lose nothing
(``Cast.canUpCast``), the common type two sides of a comparison meet in (the analyzer's
implicit casts), and a literal's value after a cast, computed exactly or not at all."""

from __future__ import annotations

import datetime as dt
import re
from datetime import tzinfo
from decimal import Decimal

from pyspark.sql.types import (
    ArrayType,
    AtomicType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    IntegralType,
    LongType,
    MapType,
    NullType,
    NumericType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
    UserDefinedType,
    VariantType,
    YearMonthIntervalType,
)

from ...exceptions import UncertainCast as Uncertain

# Spark's ``numericPrecedence``: each type widens to the ones after it.
_PRECEDENCE = (ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType)
# ``DecimalType.forType``: the decimal that holds every value of an integral type.
_INTEGRAL_DECIMALS: dict[type[DataType], tuple[int, int]] = {
    ByteType: (3, 0),
    ShortType: (5, 0),
    IntegerType: (10, 0),
    LongType: (20, 0),
}


def _rank(t: DataType) -> int:
    return next((i for i, kind in enumerate(_PRECEDENCE) if isinstance(t, kind)), -1)


def _as_decimal(t: DataType) -> DecimalType | None:
    if isinstance(t, DecimalType):
        return t
    bounds = _INTEGRAL_DECIMALS.get(type(t))
    return None if bounds is None else DecimalType(*bounds)


def _wider_decimal(a: DecimalType, b: DataType) -> bool:
    """``DecimalType.isWiderThan``: every value of ``b`` (a decimal or integral type) fits ``a``."""
    other = _as_decimal(b)
    return other is not None and a.precision - a.scale >= other.precision - other.scale and a.scale >= other.scale


def _tighter_decimal(a: DecimalType, b: DataType) -> bool:
    """``DecimalType.isTighterThan``: every value of ``a`` fits ``b`` (a decimal or integral type)."""
    other = _as_decimal(b)
    return other is not None and a.precision - a.scale <= other.precision - other.scale and a.scale <= other.scale


def can_up_cast(source: DataType, target: DataType) -> bool:  # noqa: C901 - Spark's rule, case by case
    """Spark's ``Cast.canUpCast``: whether a cast from ``source`` to ``target`` loses nothing."""
    if source == target:
        return True
    if isinstance(source, VariantType):
        return False
    if isinstance(source, NullType):
        return True
    if isinstance(source, NumericType) and isinstance(target, DecimalType) and _wider_decimal(target, source):
        return True
    if isinstance(source, DecimalType) and isinstance(target, NumericType) and _tighter_decimal(source, target):
        return True
    if 0 <= _rank(source) < _rank(target):
        return True
    datetimes: set[tuple[type[DataType], type[DataType]]] = {
        (DateType, TimestampType),
        (DateType, TimestampNTZType),
        (TimestampNTZType, TimestampType),
    }
    datetimes |= {(TimestampType, TimestampNTZType), (TimestampType, LongType), (LongType, TimestampType)}
    if (type(source), type(target)) in datetimes:
        return True
    if isinstance(source, AtomicType) and isinstance(target, StringType):
        return True
    if isinstance(source, ArrayType) and isinstance(target, ArrayType):
        return (target.containsNull or not source.containsNull) and can_up_cast(source.elementType, target.elementType)
    if isinstance(source, MapType) and isinstance(target, MapType):
        return (
            (target.valueContainsNull or not source.valueContainsNull)
            and can_up_cast(source.keyType, target.keyType)
            and can_up_cast(source.valueType, target.valueType)
        )
    if isinstance(source, StructType) and isinstance(target, StructType):
        return len(source.fields) == len(target.fields) and all(
            (t.nullable or not s.nullable) and can_up_cast(s.dataType, t.dataType)
            for s, t in zip(source.fields, target.fields, strict=True)
        )
    for interval in (DayTimeIntervalType, YearMonthIntervalType):
        if isinstance(source, interval) and isinstance(target, interval):
            return True
    if isinstance(source, UserDefinedType) and isinstance(target, UserDefinedType):
        return type(source) is type(target)
    return False


# Casts that keep every value exactly, hence its order: an int column widened to meet a
# bigint literal still compares as the int column does.
_EXACT_WIDENINGS: dict[type[DataType], tuple[type[DataType], ...]] = {
    ByteType: (ShortType, IntegerType, LongType, FloatType, DoubleType),
    ShortType: (IntegerType, LongType, FloatType, DoubleType),
    IntegerType: (LongType, DoubleType),
    FloatType: (DoubleType,),
}


def exact_widening(source: DataType, target: DataType) -> bool:
    """Whether a cast from ``source`` to ``target`` keeps every value exactly, hence order."""
    if source == target:
        return True
    if isinstance(target, DecimalType) and (isinstance(source, (DecimalType, IntegralType))):
        return _wider_decimal(target, source)
    return isinstance(target, _EXACT_WIDENINGS.get(type(source), ()))


def _wider_numeric(a: DataType, b: DataType) -> DataType:
    """The type two numeric types meet in (Spark's tightest common type; decimals widened)."""
    if isinstance(a, DecimalType) or isinstance(b, DecimalType):
        if isinstance(a, (FloatType, DoubleType)) or isinstance(b, (FloatType, DoubleType)):
            return DoubleType()
        x, y = _as_decimal(a), _as_decimal(b)
        assert x is not None and y is not None
        scale = max(x.scale, y.scale)
        digits = max(x.precision - x.scale, y.precision - y.scale)
        return DecimalType(min(digits + scale, 38), scale)
    return a if _rank(a) >= _rank(b) else b


_DATETIMES = (DateType, TimestampType, TimestampNTZType)


def comparison_type(a: DataType, b: DataType) -> DataType | None:
    """The type the analyzer casts both sides of a comparison (``=``, ``<``, ``IN``) to; None when
    it is not one of the cases modelled here."""
    if a == b:
        return a
    if isinstance(a, NullType):
        return b
    if isinstance(b, NullType):
        return a
    if isinstance(a, NumericType) and isinstance(b, NumericType):
        return _wider_numeric(a, b)
    if isinstance(a, _DATETIMES) and isinstance(b, _DATETIMES):
        if isinstance(a, TimestampType) or isinstance(b, TimestampType):
            return TimestampType()
        return TimestampNTZType()
    if isinstance(b, StringType):
        a, b = b, a
    if isinstance(a, StringType):  # under ANSI (Spark 4's default): text meets integers as BIGINT
        if isinstance(b, IntegralType):
            return LongType()
        if isinstance(b, (FloatType, DoubleType)):
            return DoubleType()
        if isinstance(b, (*_DATETIMES, BooleanType)):
            return b
    return None


_INTEGER_TEXT = re.compile(r"[+-]?\d+")
_FLOAT_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_DATE_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIMESTAMP_TEXT = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?(Z|[+-]\d{2}:\d{2})?")
_RANGES: dict[type[DataType], int] = {ByteType: 2**7, ShortType: 2**15, IntegerType: 2**31, LongType: 2**63}


def cast_value(value: object, source: DataType, target: DataType, time_zone: tzinfo) -> object:  # noqa: C901
    """``CAST(value AS target)`` of a literal, exactly as Spark computes it, or ``Uncertain``.

    Only casts whose result is certain are computed: widenings, integers from integer
    text, dates and timestamps from ISO text (in ``time_zone``, the session's).
    """
    if value is None or source == target:
        return value
    if isinstance(target, tuple(_RANGES)):
        if isinstance(value, bool):
            raise Uncertain
        if isinstance(value, int) or (isinstance(value, str) and _INTEGER_TEXT.fullmatch(value)):
            number = int(value)
            bound = _RANGES[type(target)]
            if -bound <= number < bound:
                return number
        raise Uncertain
    if isinstance(target, (FloatType, DoubleType)):
        if isinstance(value, str) and _FLOAT_TEXT.fullmatch(value):
            return float(value)
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) <= 2**24:
            return float(value)
        if isinstance(value, float) and isinstance(target, DoubleType):
            return value
        raise Uncertain
    if isinstance(target, DecimalType):
        if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
            decimal = Decimal(value)
            if decimal == decimal.quantize(Decimal(1).scaleb(-target.scale)) and len(decimal.as_tuple().digits) <= 38:
                return decimal
        raise Uncertain
    if isinstance(target, DateType) and isinstance(value, str) and _DATE_TEXT.fullmatch(value.strip()):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            raise Uncertain from None
    if isinstance(target, (TimestampType, TimestampNTZType)):
        return _timestamp(value, target, time_zone)
    raise Uncertain


def _timestamp(value: object, target: DataType, time_zone: tzinfo) -> dt.datetime:
    """A date or ISO text as a TIMESTAMP (aware, UTC) or TIMESTAMP_NTZ (naive)."""
    if isinstance(value, dt.datetime):
        raise Uncertain  # between the two timestamp types: depends on the session's zone rules
    if isinstance(value, dt.date):
        local = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and (match := _TIMESTAMP_TEXT.fullmatch(value.strip())):
        day, hour, minute, second, fraction, offset = match.groups()
        try:
            local = dt.datetime.fromisoformat(day).replace(
                hour=int(hour or 0),
                minute=int(minute or 0),
                second=int(second or 0),
                microsecond=int((fraction or "0").ljust(6, "0")),
            )
        except ValueError:
            raise Uncertain from None
        if offset is not None:
            if isinstance(target, TimestampNTZType):
                raise Uncertain
            zone = dt.UTC if offset == "Z" else dt.datetime.strptime(offset, "%z").tzinfo
            return local.replace(tzinfo=zone).astimezone(dt.UTC)
    else:
        raise Uncertain
    if isinstance(target, TimestampNTZType):
        return local
    aware = local.replace(tzinfo=time_zone)
    if aware.replace(fold=1).utcoffset() != aware.utcoffset():
        raise Uncertain  # an ambiguous or skipped local time: Java's resolution may differ
    return aware.astimezone(dt.UTC)

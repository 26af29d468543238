"""Partition values: from the log's string map to typed Arrow columns.

The spec serializes every partition value as a string (``null`` for null, and an empty
string means null for any type); typing them by the table schema lets predicates compare
dates as dates and numbers as numbers. Timestamps come in the forms writers use:
``2021-09-08 11:11:11[.ffffff]`` (UTC here, as delta-rs and delta-kernel assume), or ISO
8601 with ``T`` and a ``Z`` or ``+hh:mm`` offset (delta-spark's UTC form).
"""

from __future__ import annotations

from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidLogError
from .schema import PrimitiveType, StructType, to_arrow_type

_TIMESTAMP = (
    r"^(?P<date>\d{4}-\d{2}-\d{2})(?:[T ](?P<time>\d{2}:\d{2}(?::\d{2})?))?"
    r"(?:\.(?P<fraction>\d{1,9}))?(?P<zone>Z|[+-]\d{2}(?::?\d{2})?)?$"
)
_MICROS_PER_MINUTE = 60_000_000


def _int_or_zero(text: pa.Array[Any]) -> pa.Array[Any]:
    zero_if_empty = cast("pa.Array[Any]", pc.if_else(pc.equal(text, pa.scalar("")), "0", text))
    return pc.cast(zero_if_empty, pa.int64())


def parse_timestamp_text(values: pa.Array[Any], what: str = "timestamp") -> pa.TimestampArray[Any, Any]:
    """Timestamp strings as UTC microseconds (``timestamp[us]``), offsets applied.

    Fractions beyond microseconds are truncated; a value in no known form raises rather
    than turning into null.
    """
    parts = pc.extract_regex(values, _TIMESTAMP)
    unparsed = pc.and_(pc.is_valid(values), pc.is_null(parts))
    if pc.any(unparsed).as_py():
        bad = values.filter(unparsed)[0].as_py()
        raise InvalidLogError(f"cannot parse {what} value {bad!r}")
    time = pc.struct_field(parts, "time")
    time = pc.if_else(pc.equal(time, pa.scalar("")), "00:00:00", time)
    time = pc.if_else(pc.equal(pc.utf8_length(time), pa.scalar(5)), pc.binary_join_element_wise(time, ":00", ""), time)
    base = pc.cast(pc.binary_join_element_wise(pc.struct_field(parts, "date"), time, " "), pa.timestamp("s"))
    fraction = pc.utf8_slice_codeunits(pc.binary_join_element_wise(pc.struct_field(parts, "fraction"), "000000", ""), 0, 6)
    micros = pc.add(pc.cast(pc.cast(base, pa.timestamp("us")), pa.int64()), pc.cast(fraction, pa.int64()))
    zone = pc.replace_substring(pc.struct_field(parts, "zone"), ":", "")
    sign = pc.if_else(pc.starts_with(zone, "-"), -1, 1)
    hours = _int_or_zero(pc.utf8_slice_codeunits(zone, 1, 3))
    minutes = _int_or_zero(pc.utf8_slice_codeunits(zone, 3, 5))
    offset = pc.multiply(pc.multiply(pc.add(pc.multiply(hours, 60), minutes), _MICROS_PER_MINUTE), sign)
    return cast("pa.TimestampArray[Any, Any]", pc.cast(pc.subtract(micros, offset), pa.timestamp("us")))


def _parse(values: pa.Array[Any], arrow_type: pa.DataType, delta_type_name: str | None) -> pa.Array[Any]:
    # An empty string is null for every type (PROTOCOL.md, "Partition Value Serialization").
    values = cast("pa.Array[Any]", pc.if_else(pc.equal(values, pa.scalar("")), pa.scalar(None, pa.string()), values))
    if pa.types.is_string(arrow_type):
        return values
    if delta_type_name in ("timestamp", "timestamp_ntz"):
        parsed = parse_timestamp_text(values, f"{delta_type_name} partition")
        return pc.assume_timezone(parsed, "UTC") if delta_type_name == "timestamp" else parsed
    if pa.types.is_boolean(arrow_type):
        return pc.equal(pc.utf8_lower(values), pa.scalar("true"))
    if pa.types.is_binary(arrow_type):
        return pc.cast(values, pa.binary())
    return pc.cast(values, arrow_type)


def typed_partition_values(partition_values: pa.Array[Any], schema: StructType, partition_columns: tuple[str, ...]) -> pa.Table:
    """One typed column per partition column, looked up in each file's partitionValues."""
    columns = {}
    for name in partition_columns:
        field = schema.field(name)
        lookup_key = field.physical_name
        raw = pc.map_lookup(partition_values, lookup_key, "first") if len(partition_values) else pa.array([], pa.string())
        if raw.null_count == len(raw) and lookup_key != name:
            raw = pc.map_lookup(partition_values, name, "first")
        delta_name = field.type.name if isinstance(field.type, PrimitiveType) else None
        columns[field.name] = _parse(raw, to_arrow_type(field.type), delta_name)
    if not columns:  # still one row per file, so per-file columns can be appended
        return pa.Table.from_struct_array(cast(pa.StructArray, pa.array([{}] * len(partition_values), pa.struct([]))))
    return pa.table(columns)

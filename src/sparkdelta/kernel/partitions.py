"""Partition values: from the log's string map to typed Arrow columns.

The spec serializes every partition value as a string (``null`` for null); typing them
by the table schema lets predicates compare dates as dates and numbers as numbers.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .schema import PrimitiveType, StructType, to_arrow_type


def _parse(values: pa.Array, arrow_type: pa.DataType, delta_type_name: str | None) -> pa.Array:
    if pa.types.is_string(arrow_type):
        return values
    if delta_type_name in ("timestamp", "timestamp_ntz"):
        # "2021-09-08 11:11:11[.ffffff]" or ISO 8601 with 'T' and an optional 'Z'.
        text = pc.replace_substring_regex(values, r"Z$", "")
        text = pc.replace_substring_regex(text, "T", " ")
        parsed = pc.cast(text, pa.timestamp("us"))
        return pc.assume_timezone(parsed, "UTC") if delta_type_name == "timestamp" else parsed
    if pa.types.is_boolean(arrow_type):
        return pc.equal(pc.utf8_lower(values), "true")
    if pa.types.is_binary(arrow_type):
        return pc.cast(values, pa.binary())
    return pc.cast(values, arrow_type)


def typed_partition_values(
    partition_values: pa.Array, schema: StructType, partition_columns: tuple[str, ...]
) -> pa.Table:
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
    return pa.table(columns)

"""Per-file statistics for data skipping, from the Parquet footers Spark just wrote.

Footers already hold each column chunk's min, max and null count, so the stats cost a
footer read per file, not a pass over the data. Values are written as delta-spark writes
them: dates ``YYYY-MM-DD``, timestamps in UTC milliseconds with ``Z`` (max rounded up),
strings cut to 32 UTF-16 code units (a cut max gets a tie-breaker so it stays an upper
bound), decimals as exact JSON numbers. Leaves of arrays and maps get no stats, as in
delta-spark.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

STRING_PREFIX_LENGTH = 32
# delta-spark's tie-breakers for a cut max: the ASCII max when the cut character is below
# it, else the largest code point; a max too long to cut within twice the prefix gets none.
_ASCII_MAX = "\x7f"
_CODE_POINT_MAX = "\U0010ffff"
# Decimals pass through the JSON encoder as tagged strings and come out as bare numbers.
_DECIMAL_TAG = "\x00decimal:"
_TAGGED_DECIMAL = re.compile(r'"\\u0000decimal:([-+0-9.E]+)"')


def _prefix_length(value: str, units: int) -> int:
    """How many characters of ``value`` fit in ``units`` UTF-16 code units (Java's string length)."""
    used = 0
    for count, char in enumerate(value):
        used += 2 if ord(char) > 0xFFFF else 1
        if used > units:
            return count
    return len(value)


def truncated_min(value: str, units: int = STRING_PREFIX_LENGTH) -> str:
    """A lower bound of ``value`` at most ``units`` long: its prefix, never half a surrogate pair."""
    return value[: _prefix_length(value, units)]


def truncated_max(value: str, units: int = STRING_PREFIX_LENGTH) -> str | None:
    """An upper bound of ``value`` about ``units`` long, or None when none is short enough.

    The prefix gets a tie-breaker greater than the character it cut; characters that
    already are the largest code point cannot be beaten, so the prefix grows past them.
    """
    cut = _prefix_length(value, units)
    limit = _prefix_length(value, 2 * units)
    while cut <= limit:
        if cut >= len(value):
            return value
        if value[cut] == _CODE_POINT_MAX:
            cut += 1
        elif value[cut] < _ASCII_MAX:
            return value[:cut] + _ASCII_MAX
        else:
            return value[:cut] + _CODE_POINT_MAX
    return None


def _timestamp(value: datetime, round_up: bool) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    if round_up and value.microsecond % 1000:
        value = value + timedelta(microseconds=1000 - value.microsecond % 1000)
    return value.isoformat(timespec="milliseconds") + "Z"


def _json_value(value: Any, is_max: bool) -> Any:
    if isinstance(value, datetime):
        return _timestamp(value, round_up=is_max)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return None if not value.is_finite() else f"{_DECIMAL_TAG}{value}"
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"  # delta-spark's (Jackson's) spelling; bare tokens are not JSON
    if isinstance(value, str):
        return truncated_max(value) if is_max else truncated_min(value)
    if isinstance(value, (bytes, bytearray)):
        return None
    return value


def _set_nested(target: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value


def _leaf_paths(data_type: pa.DataType, path: tuple[str, ...]) -> list[tuple[str, ...] | None]:
    """The Parquet leaf columns under a field of ``data_type``, in file order: each one's names, or None
    inside a list or map (no stats there).

    Names are kept whole: a Parquet column's dotted path cannot tell the column ``a.b``
    from field ``b`` of a struct ``a``.
    """
    if pa.types.is_struct(data_type):
        return [leaf for child in data_type for leaf in _leaf_paths(child.type, (*path, child.name))]
    if pa.types.is_map(data_type):
        return [None] * (len(_leaf_paths(data_type.key_type, ())) + len(_leaf_paths(data_type.item_type, ())))
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type) or pa.types.is_fixed_size_list(data_type):
        return [None] * len(_leaf_paths(data_type.value_type, ()))
    return [path]


def file_stats(metadata: pq.FileMetaData, indexed: set[tuple[str, ...]], path: str) -> tuple[str, int]:
    """The stats JSON of one Parquet file (``path``, its footer ``metadata``) and its row count.

    ``indexed`` names the leaf columns to collect by their physical names, outermost first
    (``kernel.stats_schema.stats_leaves``).
    """
    paths = [leaf for field in metadata.schema.to_arrow_schema() for leaf in _leaf_paths(field.type, (field.name,))]
    if len(paths) != metadata.num_columns:
        raise ValueError(f"{path}: {metadata.num_columns} Parquet columns but {len(paths)} leaves in its Arrow schema")
    leaves: dict[tuple[str, ...], dict[str, Any]] = {}
    for group_index in range(metadata.num_row_groups):
        group = metadata.row_group(group_index)
        for i in range(group.num_columns):
            column_path = paths[i]
            if column_path is None or column_path not in indexed:
                continue
            chunk = group.column(i)
            leaf = leaves.setdefault(column_path, {"min": None, "max": None, "nulls": 0, "complete": True})
            stats = chunk.statistics
            # pyarrow-stubs misspell ``has_null_count`` (hash_null_count).
            null_count = stats.null_count if stats is not None and stats.has_null_count else None  # type: ignore[attr-defined]
            if null_count is None:
                leaf["nulls"] = None
            elif leaf["nulls"] is not None:
                leaf["nulls"] += null_count
            if stats is None or not stats.has_min_max:
                if chunk.num_values > (null_count or 0):
                    leaf["complete"] = False
                continue
            leaf["min"] = stats.min if leaf["min"] is None else min(leaf["min"], stats.min)
            leaf["max"] = stats.max if leaf["max"] is None else max(leaf["max"], stats.max)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for column_path in paths:
        if column_path is None or column_path not in leaves:
            continue
        leaf = leaves[column_path]
        if leaf["nulls"] is not None:
            _set_nested(nulls, column_path, leaf["nulls"])
        if leaf["complete"] and leaf["min"] is not None:
            low, high = _json_value(leaf["min"], False), _json_value(leaf["max"], True)
            if low is not None and high is not None:
                _set_nested(mins, column_path, low)
                _set_nested(maxs, column_path, high)
    stats_json = {"numRecords": metadata.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    text = json.dumps(stats_json, separators=(",", ":"), ensure_ascii=False)
    return _TAGGED_DECIMAL.sub(r"\1", text), metadata.num_rows


def column_bounds(metadata: pq.FileMetaData, names: set[str]) -> dict[str, tuple[Any, Any] | None]:
    """The min and max of each top-level primitive column in ``names`` (physical names) over
    the file's row groups, from their footer statistics. A column whose values are all null
    is left out; one with values but a chunk without statistics maps to None (unknown)."""
    top = [field.name for field in metadata.schema.to_arrow_schema() for _ in _leaf_paths(field.type, (field.name,))]
    bounds: dict[str, tuple[Any, Any] | None] = {}
    for group_index in range(metadata.num_row_groups):
        group = metadata.row_group(group_index)
        for i in range(group.num_columns):
            name = top[i]
            if name not in names or (name in bounds and bounds[name] is None):
                continue
            chunk = group.column(i)
            stats = chunk.statistics
            if stats is None or not stats.has_min_max:
                # pyarrow-stubs misspell ``has_null_count`` (hash_null_count).
                null_count = stats.null_count if stats is not None and stats.has_null_count else None  # type: ignore[attr-defined]
                if null_count is None or chunk.num_values > null_count:
                    bounds[name] = None
                continue
            low: Any = stats.min
            high: Any = stats.max
            known = bounds.get(name)
            if known is not None:
                low, high = min(known[0], low), max(known[1], high)
            bounds[name] = (low, high)
    return bounds

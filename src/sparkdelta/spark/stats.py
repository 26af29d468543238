"""Per-file statistics for data skipping, from the Parquet footers Spark just wrote.

Footers already hold each column chunk's min, max and null count, so the stats cost a
footer read per file, not a pass over the data. Values are written as delta-spark writes
them: dates ``YYYY-MM-DD``, timestamps in UTC milliseconds with ``Z`` (max rounded up),
strings cut to 32 characters (a cut max gets a U+FFFF tie-breaker so it stays an upper
bound). Leaves of arrays and maps get no stats, as in delta-spark.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pyarrow.parquet as pq

STRING_PREFIX_LENGTH = 32
DEFAULT_NUM_INDEXED_COLS = 32


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
        return float(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str) and len(value) > STRING_PREFIX_LENGTH:
        return value[:STRING_PREFIX_LENGTH] + ("\uffff" if is_max else "")
    if isinstance(value, (bytes, bytearray)):
        return None
    return value


def _set_nested(target: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value


def indexed_columns(column_paths: list[str], configuration: dict[str, str]) -> set[str]:
    """Leaf column paths that get stats: ``dataSkippingStatsColumns`` or the first N leaves."""
    explicit = configuration.get("delta.dataSkippingStatsColumns")
    if explicit:
        wanted = [c.strip().strip("`") for c in explicit.split(",") if c.strip()]
        return {p for p in column_paths if any(p == w or p.startswith(w + ".") for w in wanted)}
    limit = int(configuration.get("delta.dataSkippingNumIndexedCols", DEFAULT_NUM_INDEXED_COLS))
    return set(column_paths if limit < 0 else column_paths[:limit])


def file_stats(path: str, configuration: dict[str, str], indexed: set[str] | None = None) -> tuple[str, int]:
    """The stats JSON of one Parquet file and its row count.

    ``indexed`` names the leaf columns to collect, as dotted physical paths (from
    ``kernel.stats_schema.stats_leaves``); without it they follow the configuration,
    reading the file's column names as the table's.
    """
    metadata = pq.ParquetFile(path).metadata
    leaves: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    schema = metadata.schema
    for i in range(metadata.num_columns):
        column = schema.column(i)
        if column.max_repetition_level == 0:
            order.append(column.path)
    if indexed is None:
        indexed = indexed_columns(order, configuration)
    for group_index in range(metadata.num_row_groups):
        group = metadata.row_group(group_index)
        for i in range(group.num_columns):
            chunk = group.column(i)
            if chunk.path_in_schema not in indexed:
                continue
            leaf = leaves.setdefault(chunk.path_in_schema, {"min": None, "max": None, "nulls": 0, "complete": True})
            stats = chunk.statistics
            if stats is None or not stats.has_null_count:
                leaf["nulls"] = None
            elif leaf["nulls"] is not None:
                leaf["nulls"] += stats.null_count
            if stats is None or not stats.has_min_max:
                if chunk.num_values > (stats.null_count if stats is not None and stats.has_null_count else 0):
                    leaf["complete"] = False
                continue
            leaf["min"] = stats.min if leaf["min"] is None else min(leaf["min"], stats.min)
            leaf["max"] = stats.max if leaf["max"] is None else max(leaf["max"], stats.max)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for column_path in order:
        if column_path not in leaves:
            continue
        leaf = leaves[column_path]
        parts = column_path.split(".")
        if leaf["nulls"] is not None:
            _set_nested(nulls, parts, leaf["nulls"])
        if leaf["complete"] and leaf["min"] is not None:
            low, high = _json_value(leaf["min"], False), _json_value(leaf["max"], True)
            if low is not None and high is not None:
                _set_nested(mins, parts, low)
                _set_nested(maxs, parts, high)
    stats_json = {"numRecords": metadata.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    return json.dumps(stats_json, separators=(",", ":"), ensure_ascii=False), metadata.num_rows

"""Which columns get per-file stats, and the typed (``stats_parsed``) form of those stats.

Writers collect min/max/null counts for the first ``delta.dataSkippingNumIndexedCols``
leaf columns (32 by default, -1 for all) of the data schema, or for the columns named by
``delta.dataSkippingStatsColumns``; both engines and checkpoints must agree on that set.
Stats are keyed by physical name. Leaves inside arrays and maps get none.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pjson

from .partitions import parse_timestamp_text
from .schema import DataType, DecimalType, PrimitiveType, StructType, to_arrow_type

log = logging.getLogger(__name__)

DEFAULT_NUM_INDEXED_COLS = 32
_MIN_MAX_TYPES = frozenset(
    {"long", "integer", "short", "byte", "float", "double", "boolean", "string", "date", "timestamp", "timestamp_ntz"}
)


@dataclass(frozen=True)
class StatsLeaf:
    logical: tuple[str, ...]
    physical: tuple[str, ...]
    type: DataType


def _leaves(data_type: StructType, logical: tuple[str, ...], physical: tuple[str, ...]) -> list[StatsLeaf]:
    result = []
    for field in data_type.fields:
        names, physical_names = (*logical, field.name), (*physical, field.physical_name)
        if isinstance(field.type, StructType):
            result.extend(_leaves(field.type, names, physical_names))
        elif isinstance(field.type, (PrimitiveType, DecimalType)):
            result.append(StatsLeaf(names, physical_names, field.type))
    return result


def _split_column_list(text: str) -> list[tuple[str, ...]]:
    """``a, b.c, `x.y``` -> [("a",), ("b", "c"), ("x.y",)], names lower-cased."""
    columns = []
    for item in text.split(","):
        parts, current, quoted = [], "", False
        for char in item.strip():
            if char == "`":
                quoted = not quoted
            elif char == "." and not quoted:
                parts.append(current)
                current = ""
            else:
                current += char
        parts.append(current)
        if any(parts):
            columns.append(tuple(p.strip().lower() for p in parts))
    return columns


def stats_leaves(schema: StructType, partition_columns: tuple[str, ...], configuration: dict[str, str]) -> list[StatsLeaf]:
    """The leaf columns that get stats, in schema order."""
    partitions = {c.lower() for c in partition_columns}
    data = StructType(tuple(f for f in schema.fields if f.name.lower() not in partitions))
    leaves = _leaves(data, (), ())
    explicit = configuration.get("delta.dataSkippingStatsColumns")
    if explicit:
        wanted = _split_column_list(explicit)
        lowered = [tuple(n.lower() for n in leaf.logical) for leaf in leaves]
        return [leaf for leaf, names in zip(leaves, lowered, strict=True) if any(names[: len(w)] == w for w in wanted)]
    limit = int(configuration.get("delta.dataSkippingNumIndexedCols", DEFAULT_NUM_INDEXED_COLS))
    return leaves if limit < 0 else leaves[:limit]


def _nested(leaves: list[StatsLeaf], leaf_type: Callable[[StatsLeaf], pa.DataType]) -> pa.StructType:
    """A struct nesting each leaf's Arrow type under its physical path."""
    tree: dict[str, Any] = {}
    for leaf in leaves:
        node = tree
        for name in leaf.physical[:-1]:
            node = node.setdefault(name, {})
        node[leaf.physical[-1]] = leaf_type(leaf)

    def build(node: dict[str, Any]) -> pa.StructType:
        return pa.struct([pa.field(k, build(v) if isinstance(v, dict) else v) for k, v in node.items()])

    return build(tree)


def _json_type(leaf: StatsLeaf) -> pa.DataType:
    """How a bound is spelled in the stats JSON: dates and timestamps as text."""
    if isinstance(leaf.type, PrimitiveType) and leaf.type.name in ("date", "timestamp", "timestamp_ntz"):
        return pa.string()
    return to_arrow_type(leaf.type)


def _has_min_max(leaf: StatsLeaf) -> bool:
    return isinstance(leaf.type, DecimalType) or (isinstance(leaf.type, PrimitiveType) and leaf.type.name in _MIN_MAX_TYPES)


def _groups(leaves: list[StatsLeaf], bound_type: Callable[[StatsLeaf], pa.DataType]) -> list[tuple[str, pa.DataType]]:
    """The stats groups and their layout; empty groups are left out (Parquet has no empty structs)."""
    bounded = [leaf for leaf in leaves if _has_min_max(leaf)]
    groups: list[tuple[str, pa.DataType]] = [("numRecords", pa.int64())]
    if bounded:
        bounds = _nested(bounded, bound_type)
        groups += [("minValues", bounds), ("maxValues", bounds)]
    if leaves:
        groups.append(("nullCount", _nested(leaves, lambda leaf: pa.int64())))
    return groups


def parsed_stats_type(leaves: list[StatsLeaf]) -> pa.StructType:
    return pa.struct(_groups(leaves, lambda leaf: to_arrow_type(leaf.type)))


def _typed(
    column: pa.StructArray, target: pa.StructType, leaves: dict[tuple[str, ...], StatsLeaf], path: tuple[str, ...]
) -> pa.StructArray:
    """Text bounds of one stats group cast to the schema's types (unparseable values become null)."""
    children: list[pa.Array[Any]] = []
    for index, field in enumerate(target):
        child = column.field(index)
        if isinstance(child, pa.StructArray) and isinstance(field.type, pa.StructType):
            children.append(_typed(child, field.type, leaves, (*path, field.name)))
            continue
        leaf = leaves[(*path, field.name)]
        try:
            if isinstance(leaf.type, PrimitiveType) and leaf.type.name in ("timestamp", "timestamp_ntz"):
                parsed = parse_timestamp_text(child)
                children.append(pc.assume_timezone(parsed, "UTC") if leaf.type.name == "timestamp" else parsed)
            else:
                children.append(pc.cast(child, field.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
            log.warning("stats of column %s cannot be typed (%s); writing nulls", ".".join((*path, field.name)), exc)
            children.append(pa.nulls(len(child), field.type))
    return pa.StructArray.from_arrays(children, fields=list(target), mask=pc.invert(column.is_valid()))


def _floating_names(data_type: pa.DataType) -> set[str]:
    """Names of the floating-point leaves anywhere in a stats layout."""
    names: set[str] = set()
    for field in data_type if isinstance(data_type, pa.StructType) else ():
        if pa.types.is_floating(field.type):
            names.add(field.name)
        names |= _floating_names(field.type)
    return names


def _unquote_non_finite(texts: pa.StringArray, schema: pa.Schema) -> pa.StringArray:
    """delta-spark's quoted non-finite doubles ("NaN", "Infinity", "-Infinity") made bare,
    the only spelling Arrow's JSON reader takes, for the floating-point columns' keys.

    A quote right after a key's colon opens a value (quotes inside strings are escaped),
    so only whole values change.
    """
    names = sorted(_floating_names(pa.struct(list(schema))))
    if not names:
        return texts
    keys = "|".join(re.escape(json.dumps(n, ensure_ascii=False)[1:-1]) for n in names)
    return pc.replace_substring_regex(texts, rf'("(?:{keys})"\s*:\s*)"(NaN|-?Infinity)"', r"\1\2")


def _read_lines(texts: pa.StringArray, schema: pa.Schema) -> pa.Table:
    joined = cast(pa.StringArray, pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(texts)], pa.int32()), texts), "\n"))
    data = joined[0].as_py().encode()
    return pjson.read_json(
        io.BytesIO(data),
        read_options=pjson.ReadOptions(block_size=max(len(data) + 1, 1 << 20)),
        parse_options=pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )


def read_stats_json(stats: pa.Array[Any], schema: pa.Schema) -> pa.Table:
    """Each file's stats JSON as a row of ``schema`` (all null where a file has none).

    Non-finite doubles parse in both spellings (quoted, as delta-spark writes them, or
    bare). Stats are only a hint: a file whose stats still cannot be read gets nulls,
    which every reader takes as "unknown", instead of failing the whole scan.
    """
    # The stubs' fill_null (coalesce) wants the values and the fill of one type.
    texts = cast(pa.StringArray, pc.fill_null(stats, "{}"))  # type: ignore[type-var]
    try:
        return _read_lines(texts, schema)
    except pa.ArrowInvalid:
        pass
    unquoted = _unquote_non_finite(texts, schema)
    try:
        return _read_lines(unquoted, schema)
    except pa.ArrowInvalid as exc:
        log.warning("some file stats cannot be parsed (%s); those files are treated as having none", exc)
    spellings = zip(cast(list[str], unquoted.to_pylist()), cast(list[str], texts.to_pylist()), strict=True)
    return _read_lines(pa.array([_readable_spelling(s, schema) for s in spellings], pa.string()), schema)


def _readable_spelling(spellings: tuple[str, str], schema: pa.Schema) -> str:
    """The first spelling of one file's stats that parses, else none (unknown stats)."""
    for text in spellings:
        try:
            _read_lines(pa.array([text]), schema)
            return text
        except pa.ArrowInvalid:
            continue
    return "{}"


def parsed_stats(stats: pa.Array[Any], leaves: list[StatsLeaf]) -> pa.StructArray:
    """``stats_parsed`` for each file's stats JSON (null where a file has none)."""
    target = parsed_stats_type(leaves)
    if len(stats) == 0:
        return cast(pa.StructArray, pa.array([], target))
    table = read_stats_json(stats, pa.schema(_groups(leaves, _json_type)))
    by_path = {leaf.physical: leaf for leaf in leaves}
    columns: list[pa.Array[Any]] = []
    for field in target:
        column = table.column(field.name).combine_chunks()
        bounds = field.name in ("minValues", "maxValues")
        if bounds and isinstance(column, pa.StructArray) and isinstance(field.type, pa.StructType):
            column = _typed(column, field.type, by_path, ())
        columns.append(column)
    return pa.StructArray.from_arrays(columns, fields=list(target), mask=pc.is_null(stats))

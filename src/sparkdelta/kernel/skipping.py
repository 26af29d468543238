"""Data skipping: which files may hold rows matching a predicate, from the log alone.

Predicates are a small expression tree (built by an engine from its own filters).
Partition columns are evaluated exactly on each file's typed partition values; data
columns are checked against the per-file stats (min, max, null count, row count). A file
is dropped only when its stats prove that no row can match; missing stats keep it.
Floating-point columns follow Spark's NaN semantics (NaN above every double, NaN = NaN);
as writers disagree on whether bounds include NaN, a NaN bound is unknown and bounds
never rule out NaN rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from .partitions import typed_partition_values
from .schema import ArrayType, DataType, MapType, PrimitiveType, StructType, to_arrow_type
from .stats_schema import read_stats_json


@dataclass(frozen=True)
class Column:
    path: tuple[str, ...]


@dataclass(frozen=True)
class Literal:
    value: Any


@dataclass(frozen=True)
class Compare:
    op: str  # one of = < <= > >=
    column: Column
    value: Literal


@dataclass(frozen=True)
class In:
    column: Column
    values: tuple[Literal, ...]


@dataclass(frozen=True)
class IsNull:
    column: Column
    negated: bool = False


@dataclass(frozen=True)
class StartsWith:
    column: Column
    prefix: str


@dataclass(frozen=True)
class And:
    left: Predicate
    right: Predicate


@dataclass(frozen=True)
class Or:
    left: Predicate
    right: Predicate


@dataclass(frozen=True)
class Not:
    child: Predicate


Predicate = Compare | In | IsNull | StartsWith | And | Or | Not

_FLIP = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def flip(op: str) -> str:
    """The operator with its operands swapped (``5 < x`` is ``x > 5``)."""
    return _FLIP[op]


def _push_not(predicate: Predicate) -> Predicate | None:
    """NOT pushed to the leaves; ``None`` where no sound stats form exists."""
    if isinstance(predicate, Not):
        return predicate.child
    if isinstance(predicate, And):
        left, right = _push_not(predicate.left), _push_not(predicate.right)
        return None if left is None or right is None else Or(left, right)
    if isinstance(predicate, Or):
        left, right = _push_not(predicate.left), _push_not(predicate.right)
        if left is None or right is None:
            return None
        return And(left, right)
    if isinstance(predicate, Compare) and predicate.op in _NEGATE:
        return Compare(_NEGATE[predicate.op], predicate.column, predicate.value)
    if isinstance(predicate, IsNull):
        return IsNull(predicate.column, not predicate.negated)
    return None


def _leaf_type(schema: StructType, path: tuple[str, ...]) -> DataType | None:
    current: DataType = schema
    for name in path:
        if not isinstance(current, StructType):
            return None
        try:
            current = current.field(name).type
        except KeyError:
            return None
    return current


_STATS_NUMBER_TYPES = {
    "long": pa.int64(),
    "integer": pa.int64(),
    "short": pa.int64(),
    "byte": pa.int64(),
    "float": pa.float64(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
}
_STATS_TEXT_TYPES = {"string", "date", "timestamp", "timestamp_ntz"}


def _stats_struct(schema: StructType, as_count: bool) -> pa.StructType:
    """The JSON layout of one stats group, by physical name.

    Min/max of decimals and binaries are left out (no skipping on them): Arrow's JSON
    reader would round decimals through doubles, which could wrongly drop a file.
    """
    fields: list[pa.Field[Any]] = []
    for f in schema.fields:
        if isinstance(f.type, StructType):
            fields.append(pa.field(f.physical_name, _stats_struct(f.type, as_count)))
        elif isinstance(f.type, (ArrayType, MapType)):
            continue
        elif as_count:
            fields.append(pa.field(f.physical_name, pa.int64()))
        elif isinstance(f.type, PrimitiveType) and f.type.name in _STATS_NUMBER_TYPES:
            fields.append(pa.field(f.physical_name, _STATS_NUMBER_TYPES[f.type.name]))
        elif isinstance(f.type, PrimitiveType) and f.type.name in _STATS_TEXT_TYPES:
            fields.append(pa.field(f.physical_name, pa.string()))
    return pa.struct(fields)


_TIMESTAMP = (
    r"^(?P<base>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?)(?P<sign>[+-])?(?P<hours>\d{2})?:?(?P<minutes>\d{2})?Z?$"
)


def _parse_timestamps(text: pa.ChunkedArray[Any]) -> pa.ChunkedArray[Any]:
    """Stats timestamps (``2000-01-01T00:00:00.000-08:00``, ``...Z``) as UTC microseconds."""
    parts = pc.extract_regex(text, _TIMESTAMP)

    def int_or_zero(name: str) -> pa.ChunkedArray[Any]:
        digits = cast("pa.ChunkedArray[Any]", pc.struct_field(parts, name))
        return pc.cast(cast("pa.ChunkedArray[Any]", pc.if_else(pc.equal(digits, pa.scalar("")), "0", digits)), pa.int64())

    base = pc.cast(pc.replace_substring(pc.struct_field(parts, "base"), "T", " "), pa.timestamp("us"))
    hours, minutes = int_or_zero("hours"), int_or_zero("minutes")
    offset_us = pc.multiply(pc.add(pc.multiply(hours, 60), minutes), 60_000_000)
    signed = pc.if_else(pc.equal(pc.struct_field(parts, "sign"), pa.scalar("-")), pc.negate(offset_us), offset_us)
    utc = cast("pa.ChunkedArray[Any]", pc.subtract(pc.cast(base, pa.int64()), signed))
    return pc.cast(utc, pa.timestamp("us"))


class FileStats:
    """Per-file stats as Arrow columns: ``numRecords``, ``minValues.*``, ``maxValues.*``, ``nullCount.*``.

    Min and max are parsed as strings, then cast per column on use, so dates and
    timestamps written as text compare as values.
    """

    def __init__(self, stats: pa.Array[Any], schema: StructType) -> None:
        self.schema = schema
        self.num_files = len(stats)
        values_schema = _stats_struct(schema, as_count=False)
        count_schema = _stats_struct(schema, as_count=True)
        explicit = pa.schema(
            [("numRecords", pa.int64()), ("minValues", values_schema), ("maxValues", values_schema), ("nullCount", count_schema)]
        )
        self.table = read_stats_json(stats, explicit) if self.num_files else explicit.empty_table()

    def _field(self, group: str, path: tuple[str, ...]) -> pa.ChunkedArray[Any] | None:
        physical = self._physical_path(path)
        if physical is None:
            return None
        current: Any = self.table.column(group)
        for name in physical:
            if not isinstance(current.type, pa.StructType) or current.type.get_field_index(name) < 0:
                return None
            current = pc.struct_field(current, name)
        return cast("pa.ChunkedArray[Any]", current)

    def _physical_path(self, path: tuple[str, ...]) -> list[str] | None:
        names = []
        current: DataType = self.schema
        for name in path:
            if not isinstance(current, StructType):
                return None
            try:
                field = current.field(name)
            except KeyError:
                return None
            names.append(field.physical_name)
            current = field.type
        return names

    def bound(self, group: str, path: tuple[str, ...]) -> pa.ChunkedArray[Any] | None:
        """Typed min or max of a column per file (null where unknown)."""
        raw = self._field(group, path)
        leaf = _leaf_type(self.schema, path)
        if raw is None or leaf is None or isinstance(leaf, (StructType, ArrayType, MapType)):
            return None
        target = to_arrow_type(leaf)
        try:
            if isinstance(leaf, PrimitiveType) and leaf.name in ("timestamp", "timestamp_ntz"):
                parsed = _parse_timestamps(raw)
                if group == "maxValues":
                    # Writers truncate timestamp stats to milliseconds: widen the max.
                    parsed = pc.cast(pc.add(pc.cast(parsed, pa.int64()), 999), pa.timestamp("us"))
                return parsed.cast(target)
            typed = pc.cast(raw, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        if pa.types.is_floating(target):
            # A NaN bound orders nothing (writers disagree on where NaN sorts): unknown.
            typed = pc.if_else(pc.is_nan(typed), pa.scalar(None, target), typed)
        return typed

    def null_count(self, path: tuple[str, ...]) -> pa.ChunkedArray[Any] | None:
        return self._field("nullCount", path)

    @property
    def num_records(self) -> pa.ChunkedArray[Any]:
        return self.table.column("numRecords")


class SkippingEvaluator:
    """Decides, per file, whether a predicate may match (True) or surely cannot (False)."""

    def __init__(
        self, files: pa.Table, schema: StructType, partition_columns: tuple[str, ...], partitions: pa.Table | None = None
    ) -> None:
        """``partitions``: the files' typed partition values, when the caller has them already."""
        self.schema = schema
        self.partition_columns = {c.lower(): c for c in partition_columns}
        self.partitions = (
            typed_partition_values(files.column("partitionValues").combine_chunks(), schema, partition_columns)
            if partitions is None
            else partitions
        )
        self.stats = FileStats(
            files.column("stats").combine_chunks(),
            StructType(tuple(f for f in schema.fields if f.name.lower() not in self.partition_columns)),
        )
        self.num_files = files.num_rows

    def keep(self, predicate: Predicate) -> pa.Array[Any]:
        """Boolean mask: True for files that must be read."""
        if self.num_files == 0:
            return pa.array([], pa.bool_())
        result = self._eval(predicate)
        if result is None:
            return pa.array([True] * self.num_files)
        filled = result.fill_null(True)
        return cast("pa.Array[Any]", filled.combine_chunks() if isinstance(filled, pa.ChunkedArray) else filled)

    def _all(self) -> pa.Array[Any]:
        return pa.array([True] * self.num_files)

    def _eval(self, predicate: Predicate) -> Any:
        if isinstance(predicate, And):
            left, right = self._eval(predicate.left), self._eval(predicate.right)
            if left is None:
                return right
            if right is None:
                return left
            return pc.and_kleene(pc.fill_null(left, True), pc.fill_null(right, True))
        if isinstance(predicate, Or):
            left, right = self._eval(predicate.left), self._eval(predicate.right)
            if left is None or right is None:
                return None
            return pc.or_kleene(pc.fill_null(left, True), pc.fill_null(right, True))
        if isinstance(predicate, Not):
            pushed = _push_not(predicate.child)
            return None if pushed is None else self._eval(pushed)
        if isinstance(predicate, In):
            result = None
            for value in predicate.values:
                one = self._eval(Compare("=", predicate.column, value))
                if one is None:
                    return None
                result = one if result is None else pc.or_kleene(pc.fill_null(result, True), pc.fill_null(one, True))
            return result
        assert isinstance(predicate, (Compare, IsNull, StartsWith))
        column = predicate.column
        if column.path[0].lower() in self.partition_columns and len(column.path) == 1:
            return self._partition(predicate)
        return self._data(predicate)

    def _partition(self, predicate: Compare | IsNull | StartsWith) -> Any:
        name = self.partition_columns[predicate.column.path[0].lower()]
        values = self.partitions.column(self.schema.field(name).name)
        try:
            if isinstance(predicate, IsNull):
                return pc.is_valid(values) if predicate.negated else pc.is_null(values)
            # A null partition value never satisfies a comparison (NOTs are pushed down to here).
            if isinstance(predicate, StartsWith):
                return pc.starts_with(values, predicate.prefix).fill_null(False)
            if isinstance(predicate, Compare):
                values = _widened(values)
                scalar = pa.scalar(predicate.value.value).cast(values.type)
                return pc.fill_null(_compare(predicate.op, values, scalar), False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        return None

    def _data(self, predicate: Compare | IsNull | StartsWith) -> Any:
        path = predicate.column.path
        if isinstance(predicate, IsNull):
            nulls = self.stats.null_count(path)
            if nulls is None:
                return None
            if predicate.negated:
                return pc.less(nulls, self.stats.num_records)
            return pc.greater(nulls, pa.scalar(0))
        low, high = self.stats.bound("minValues", path), self.stats.bound("maxValues", path)
        if low is None or high is None:
            return None
        low, high = _widened(low), _widened(high)
        try:
            if isinstance(predicate, StartsWith):
                return pc.and_kleene(
                    pc.greater_equal(high, pa.scalar(predicate.prefix)),
                    pc.less_equal(low, pa.scalar(predicate.prefix + "\U0010ffff")),
                )
            if isinstance(predicate, Compare):
                value = pa.scalar(predicate.value.value).cast(low.type)
                if pa.types.is_floating(low.type) and _nan_may_hide(predicate.op, value):
                    return None
                if predicate.op == "=":
                    return pc.and_kleene(pc.less_equal(low, value), pc.greater_equal(high, value))
                if predicate.op in ("<", "<="):
                    return _COMPARE[predicate.op](low, value)
                return _COMPARE[predicate.op](high, value)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        return None


def _widened(values: Any) -> Any:
    """``float`` bounds as ``double``: Spark compares a float column with a double literal
    after widening the column (exact), while narrowing the literal would round it."""
    if pa.types.is_float16(values.type) or pa.types.is_float32(values.type):
        return pc.cast(values, pa.float64())
    return values


def _nan_may_hide(op: str, value: pa.Scalar[Any]) -> bool:
    """Whether NaN rows may match ``x <op> value`` although min/max say no.

    Spark orders NaN above every double (and NaN = NaN), but many writers take bounds
    from Parquet footers, which leave NaN out: a file whose max is 3 may hold NaN, and
    NaN > 5. Only ``<``, ``<=`` and ``=`` against a number are safe on bounds.
    """
    return op in (">", ">=") or math.isnan(value.as_py())


def _compare(op: str, values: Any, scalar: pa.Scalar[Any]) -> Any:
    """``values <op> scalar`` with Spark's NaN semantics for floating types (Arrow's are IEEE)."""
    result = _COMPARE[op](values, scalar)
    if not pa.types.is_floating(scalar.type):
        return result
    nan_rows = pc.is_nan(values)
    if math.isnan(scalar.as_py()):  # NaN equals NaN and exceeds every other double
        return pc.if_else(nan_rows, op in ("=", "<=", ">="), op in ("<", "<="))
    return pc.if_else(nan_rows, op in (">", ">="), result)


_COMPARE = {
    "=": pc.equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}

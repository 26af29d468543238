"""Columnar decoding of log files (JSON commits and Parquet checkpoints) into Arrow.

File actions never become Python objects: a commit's lines are split by Arrow's CSV
reader, classified with regular expressions in Arrow compute, and each kind is parsed
by Arrow's JSON reader against the checkpoint layout of ``actions``. Arrow's JSON reader
cannot produce maps, so ``partitionValues`` and ``tags`` are cut out with a regex,
parsed as inferred structs (their values are only strings or null) and rebuilt as maps.

The few non-file actions per commit (protocol, metaData, txn, ...) are decoded with
``json``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cached_property
from typing import Any, Literal, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import pyarrow.parquet as pq

from . import actions as A
from .errors import InvalidLogError

_MAP_FIELDS = ("partitionValues", "tags")
# A JSON object whose values are strings or null (no nesting), as partitionValues/tags are.
_FLAT_OBJECT = r'\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}'


@dataclass(frozen=True)
class FileActions:
    adds: pa.StructArray
    removes: pa.StructArray
    cdcs: pa.StructArray


FileActionsLoader = Callable[[Sequence[str] | None], FileActions]
"""Decodes a log file's file actions: all fields of the adds (None), or at least the ones named."""


@dataclass
class ActionBatch:
    """The actions of one log file (a commit, a compaction or a checkpoint part).

    Non-file actions are decoded at once; file actions only when first asked for, so a
    writer that needs just the protocol and metadata never decodes a checkpoint's adds.
    """

    version: int
    is_checkpoint: bool
    load_file_actions: FileActionsLoader = field(repr=False)
    protocol: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    txns: list[dict[str, Any]] = field(default_factory=list)
    domains: list[dict[str, Any]] = field(default_factory=list)
    commit_info: dict[str, Any] | None = None
    sidecars: list[dict[str, Any]] = field(default_factory=list)
    checkpoint_metadata: dict[str, Any] | None = None

    @cached_property
    def file_actions(self) -> FileActions:
        return self.load_file_actions(None)

    def file_actions_with(self, add_fields: Sequence[str]) -> FileActions:
        """File actions whose adds hold at least ``add_fields`` of the ``add`` layout.

        A Parquet checkpoint not decoded yet decodes only those fields of its adds, and
        keeps nothing: listing or sizing files then never decodes their stats, most of a
        checkpoint. Otherwise these are ``file_actions``.
        """
        if "file_actions" in self.__dict__:
            return self.file_actions
        return self.load_file_actions(add_fields)

    @property
    def adds(self) -> pa.StructArray:
        return self.file_actions.adds

    @property
    def removes(self) -> pa.StructArray:
        return self.file_actions.removes

    @property
    def cdcs(self) -> pa.StructArray:
        return self.file_actions.cdcs


def empty(struct_type: pa.StructType) -> pa.StructArray:
    return cast(pa.StructArray, pa.array([], type=struct_type))


def _split_lines(data: bytes) -> pa.StringArray:
    if not data.strip():
        return pa.array([], type=pa.string())
    table = pcsv.read_csv(
        io.BytesIO(data),
        read_options=pcsv.ReadOptions(column_names=["line"], block_size=max(len(data) + 1, 1 << 20)),
        parse_options=pcsv.ParseOptions(delimiter="\x1f", quote_char=False, escape_char=False),
        convert_options=pcsv.ConvertOptions(column_types={"line": pa.string()}, strings_can_be_null=False),
    )
    return cast(pa.StringArray, table.column("line").combine_chunks())


def _join_lines(lines: pa.Array[Any]) -> bytes:
    joined = cast(pa.StringArray, pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(lines)], pa.int32()), lines), "\n"))
    return joined[0].as_py().encode("utf-8")


def _read_json_lines(lines: pa.Array[Any], schema: pa.Schema, behavior: Literal["ignore", "error", "infer"]) -> pa.Table:
    data = _join_lines(lines)
    return pjson.read_json(
        io.BytesIO(data),
        read_options=pjson.ReadOptions(block_size=max(len(data) + 1, 1 << 20), use_threads=False),
        parse_options=pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior=behavior),
    )


def _struct_to_map(values: pa.Array[Any], drop_nulls: bool) -> pa.MapArray[Any, Any]:
    """A struct<k: string, ...> column as map<string, string> (one entry per field)."""
    n = len(values)
    if not isinstance(values, pa.StructArray):
        return cast("pa.MapArray[Any, Any]", pa.array([[]] * n if n else [], type=A.STRING_MAP))
    names = [values.type.field(i).name for i in range(values.type.num_fields)]
    children = [pc.cast(values.field(i), pa.string()) for i in range(len(names))]
    k = len(names)
    if k == 0:
        no_entries = pa.array(np.zeros(n + 1, dtype=np.int32))
        # The stubs take int64 offsets only; a map's are int32.
        return pa.MapArray.from_arrays(no_entries, pa.array([], pa.string()), pa.array([], pa.string()))  # type: ignore[call-overload,no-any-return]
    row_major = (np.arange(k)[None, :] * n + np.arange(n)[:, None]).ravel()
    items = pa.concat_arrays(children).take(pa.array(row_major))
    keys = pa.array(np.tile(np.array(names, dtype=object), n), pa.string())
    if drop_nulls:
        valid = items.is_valid().to_numpy(zero_copy_only=False)
        counts = valid.reshape(n, k).sum(axis=1)
        items, keys = items.filter(pa.array(valid)), keys.filter(pa.array(valid))
    else:
        counts = np.full(n, k)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    # As above: the stubs take int64 offsets only.
    return pa.MapArray.from_arrays(pa.array(offsets), keys, items)  # type: ignore[call-overload,no-any-return]


def _object_keys(wrapped: pa.Array[Any], objects: pa.StringArray) -> list[str]:
    """Every key used in the flat objects, in first-seen order.

    Arrow's inference names the keys (the types it guesses are discarded); if its guesses
    clash, the distinct object texts are decoded instead.
    """
    try:
        inferred = _read_json_lines(wrapped, pa.schema([]), "infer")
    except pa.ArrowInvalid:
        keys: dict[str, None] = {}
        for text in cast(list[str], pc.unique(objects).to_pylist()):
            keys.update(dict.fromkeys(json.loads(text)))
        return list(keys)
    if "v" not in inferred.column_names or not isinstance(inferred.schema.field("v").type, pa.StructType):
        return []
    return [f.name for f in inferred.schema.field("v").type]


_FEW_OBJECTS = 1_000
"""Up to this many distinct ``partitionValues`` or ``tags`` objects, ``json`` decodes them."""


def _string_pairs(text: str) -> list[tuple[str, str | None]] | None:
    """A flat object's (key, value) pairs; None unless every value is a string or null and
    no key repeats (Arrow's typed read reports those)."""
    try:
        pairs = json.loads(text, object_pairs_hook=list)
    except ValueError:
        return None
    if len({k for k, _ in pairs}) < len(pairs) or any(v is not None and not isinstance(v, str) for _, v in pairs):
        return None
    return cast(list[tuple[str, str | None]], pairs)


def _maps_of_few(objects: pa.StringArray, drop_nulls: bool) -> pa.MapArray[Any, Any] | None:
    """``objects`` as maps built from their few distinct texts, as ``_struct_to_map`` builds
    them (every key seen, in first-seen order; null values dropped if ``drop_nulls``).

    A commit's files share a few partitions and mostly have no tags: decoding those few
    texts costs less than an Arrow JSON read. None when they are many, or when one is not
    an object of strings: Arrow's typed read decodes those (and reports what it refuses).
    """
    distinct = pc.unique(objects)
    if len(distinct) > _FEW_OBJECTS:
        return None
    decoded = [_string_pairs(text) for text in cast(list[str], distinct.to_pylist())]
    if any(pairs is None for pairs in decoded):
        return None
    values = [dict(pairs or ()) for pairs in decoded]
    keys = list(dict.fromkeys(k for v in values for k in v))
    entries = [[(k, v.get(k)) for k in keys if not (drop_nulls and v.get(k) is None)] for v in values]
    maps = cast("pa.MapArray[Any, Any]", pa.array(entries, A.STRING_MAP))
    return maps.take(pc.index_in(objects, value_set=distinct))


def _extract_maps(lines: pa.StringArray, kind: str) -> dict[str, pa.MapArray[Any, Any]]:
    """``partitionValues`` and ``tags`` of each line, as string maps, values verbatim.

    An add's ``partitionValues`` is required (PROTOCOL.md, "Add File and Remove File"):
    where it is missing or not an object, the map is null, for ``check_file_actions`` to refuse.
    """
    result = {}
    for name in _MAP_FIELDS:
        found = pc.extract_regex(lines, rf'"{name}"\s*:\s*(?P<obj>{_FLAT_OBJECT})')
        objects = cast(pa.StringArray, pc.fill_null(pc.struct_field(found, [0]), "{}"))
        maps = _maps_of_few(objects, drop_nulls=(name == "tags"))
        if maps is None:
            # The stubs refuse Python strings among the joined values; Arrow takes them as scalars.
            wrapped: pa.StringArray = pc.binary_join_element_wise('{"v":', objects, "}", "")  # type: ignore[call-overload]
            keys = _object_keys(wrapped, objects)
            if keys:
                # Declaring every value a string stops Arrow turning '2024-01-02' into a timestamp.
                schema = pa.schema([("v", pa.struct([(k, pa.string()) for k in keys]))])
                column = _read_json_lines(wrapped, schema, "ignore").column("v").combine_chunks()
            else:
                column = pa.array([{}] * len(lines), pa.struct([]))
            maps = _struct_to_map(column, drop_nulls=(name == "tags"))
        if name == "partitionValues" and kind == "add" and found.null_count:
            # The stubs take int64 offsets only; a map's are int32.
            maps = pa.MapArray.from_arrays(maps.offsets, maps.keys, maps.items, mask=found.is_null())  # type: ignore[call-overload]
        result[name] = maps
    return result


def conform(values: pa.Array[Any], target: pa.DataType) -> pa.Array[Any]:
    """Reshape ``values`` to ``target``: missing struct fields become null, extra ones go."""
    if values.type == target:
        return values
    if isinstance(target, pa.StructType):
        if not isinstance(values, pa.StructArray):
            return pa.nulls(len(values), target)
        present = {values.type.field(i).name: i for i in range(values.type.num_fields)}
        children: list[pa.Array[Any]] = []
        for i in range(target.num_fields):
            f = target.field(i)
            if f.name in present:
                children.append(conform(values.field(present[f.name]), f.type))
            else:
                children.append(pa.nulls(len(values), f.type))
        return pa.StructArray.from_arrays(children, fields=list(target), mask=values.is_null())
    if isinstance(target, pa.MapType) and isinstance(values, pa.StructArray):
        return _struct_to_map(values, drop_nulls=True)
    if pa.types.is_null(values.type):
        # The stubs have ``nulls`` for each concrete type, none for a DataType.
        return pa.nulls(len(values), target)  # type: ignore[call-overload,no-any-return]
    return pc.cast(values, target)


def _file_actions(lines: pa.StringArray, kind: str) -> pa.StructArray:
    target: pa.StructType = A.FILE_ACTIONS[kind]
    if len(lines) == 0:
        return empty(target)
    without_maps = pa.struct([f for f in target if f.name not in _MAP_FIELDS])
    table = _read_json_lines(lines, pa.schema([(kind, without_maps)]), "ignore")
    parsed = cast(pa.StructArray, table.column(kind).combine_chunks())
    maps = _extract_maps(lines, kind)
    children = [maps[f.name] if f.name in _MAP_FIELDS else conform(parsed.field(f.name), f.type) for f in target]
    return pa.StructArray.from_arrays(children, fields=list(target))


# What every reader relies on: a file action without these cannot be read, removed or vacuumed,
# and an add without its partition values would read as NULLs.
_REQUIRED_FIELDS = (
    ("add", "path"),
    ("add", "size"),
    ("add", "partitionValues"),
    ("remove", "path"),
    ("cdc", "path"),
    ("cdc", "size"),
)


def check_file_actions(actions: FileActions) -> None:
    """Refuse file actions lacking a path, a size or an add's partitionValues map (columnar, cheap).

    A partition column absent from the map reads as null, as delta-spark's readers take it
    and as delta-rs writes null partition values in its log compactions.
    """
    by_kind = {"add": actions.adds, "remove": actions.removes, "cdc": actions.cdcs}
    for kind, name in _REQUIRED_FIELDS:
        missing = by_kind[kind].field(name).null_count
        if missing:
            raise InvalidLogError(f"{missing} of {len(by_kind[kind])} {kind} actions have no {name}")


def parse_json_actions(data: bytes, version: int, is_checkpoint: bool = False) -> ActionBatch:
    """Decode a newline-delimited JSON log file."""
    lines = _split_lines(data)
    kinds = pc.extract_regex(lines, r'^\s*\{\s*"(?P<kind>[A-Za-z]+)"')
    kind = pc.struct_field(kinds, [0])
    if kind.null_count:
        bad = pc.filter(lines, kind.is_null())[0].as_py()
        raise InvalidLogError(f"version {version}: not an action line: {bad[:200]!r}")

    def load(add_fields: Sequence[str] | None) -> FileActions:
        # JSON has no columns to skip: every field is decoded (as ``file_actions_with`` allows).
        return FileActions(
            *(_file_actions(lines.filter(pc.equal(kind, pa.scalar(name))), name) for name in ("add", "remove", "cdc"))
        )

    batch = ActionBatch(version, is_checkpoint, load)
    other = pc.invert(pc.is_in(kind, pa.array(["add", "remove", "cdc"])))
    for line in lines.filter(other).to_pylist():
        ((name, value),) = json.loads(cast(str, line)).items()
        _apply_non_file_action(batch, name, value)
    return batch


def _apply_non_file_action(batch: ActionBatch, name: str, value: dict[str, Any]) -> None:
    if name == "protocol":
        batch.protocol = value
    elif name == "metaData":
        batch.metadata = value
    elif name == "txn":
        batch.txns.append(value)
    elif name == "domainMetadata":
        batch.domains.append(value)
    elif name == "commitInfo":
        batch.commit_info = value
    elif name == "sidecar":
        batch.sidecars.append(value)
    elif name == "checkpointMetadata":
        batch.checkpoint_metadata = value


_NON_FILE_COLUMNS = ("protocol", "metaData", "txn", "domainMetadata", "sidecar", "checkpointMetadata")
_NON_FILE_BATCH_ROWS = 16_384
"""Rows decoded at a time for the non-file actions: a checkpoint of 100,000 files holds one
protocol and one metaData, and decoding their columns whole would take 30 MB of nulls."""


def _columns_with_values(parquet: pq.ParquetFile) -> set[str]:
    """The top-level columns not null in every row by the footer's statistics (a checkpoint's
    ``remove`` or ``txn`` column often is): the others hold no action, nothing to decode."""
    columns = set()
    metadata = parquet.metadata
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        for j in range(group.num_columns):
            chunk = group.column(j)
            stats = chunk.statistics
            # ``has_null_count`` is missing from the stubs (pyarrow has it since 7.0).
            if stats is None or not stats.has_null_count or stats.null_count != chunk.num_values:  # type: ignore[attr-defined]
                columns.add(chunk.path_in_schema.partition(".")[0])
    return columns


def parse_parquet_actions(source: Any, version: int, file_actions_only: bool = False) -> ActionBatch:
    """Decode a Parquet checkpoint part or sidecar (path or file-like)."""
    parquet = pq.ParquetFile(source)
    available = _columns_with_values(parquet)

    def load(add_fields: Sequence[str] | None) -> FileActions:
        stored = {f.name for f in parquet.schema_arrow.field("add").type} if "add" in available else set()
        columns = [f"add.{name}" for name in add_fields or () if name in stored]
        if add_fields is not None and "stats" not in add_fields and columns:
            # Only those fields' columns are read (stats, the bulk of a checkpoint, never are);
            # the ones the checkpoint lacks come out null, as ``conform`` makes them in a full read.
            # So few columns gain less from Arrow's threads than starting them costs.
            removes = ["remove"] if "remove" in available else []
            table = parquet.read(columns=[*columns, *removes], use_threads=False)
            layout = pa.struct([A.ADD.field(name) for name in add_fields])
            return FileActions(_file_column(table, "add", layout), _file_column(table, "remove", A.REMOVE), empty(A.CDC))
        table = parquet.read(columns=[c for c in ("add", "remove") if c in available])
        adds = _file_column(table, "add", A.ADD)
        if "add" in table.column_names and "stats_parsed" in [f.name for f in table.schema.field("add").type]:
            adds = _fill_stats_from_parsed(adds, cast(pa.StructArray, table.column("add").combine_chunks()))
        return FileActions(adds, _file_column(table, "remove", A.REMOVE), empty(A.CDC))

    batch = ActionBatch(version, True, load)
    columns = [c for c in _NON_FILE_COLUMNS if c in available]
    if file_actions_only or not columns:
        return batch
    for rows in parquet.iter_batches(batch_size=_NON_FILE_BATCH_ROWS, columns=columns, use_threads=False):
        for name, column in zip(rows.schema.names, rows.columns, strict=True):
            for value in column.filter(column.is_valid()).to_pylist():
                _apply_non_file_action(batch, name, _maps_to_dicts(value))
    return batch


def _file_column(table: pa.Table, name: str, target: pa.StructType) -> pa.StructArray:
    """The non-null rows of a checkpoint's ``add`` or ``remove`` column, as ``target``.

    Checkpoints usually hold the other actions before or after the files, so the rows
    wanted are one run, taken as a slice: filtering would copy every file action.
    """
    if name not in table.column_names:
        return empty(target)
    column = table.column(name).combine_chunks()
    if column.null_count:
        rows = np.flatnonzero(column.is_valid().to_numpy(zero_copy_only=False))
        if len(rows) and rows[-1] - rows[0] + 1 == len(rows):
            column = column.slice(rows[0], len(rows))
        else:
            column = column.filter(column.is_valid())
    return cast(pa.StructArray, conform(column, target))


def _stats_value(value: Any) -> Any:
    """JSON form of a stats value, as delta-spark writes it (timestamps in UTC millis, 'Z')."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.isoformat(timespec="milliseconds") + "Z"
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"unsupported stats value {value!r}")


def _fill_stats_from_parsed(adds: pa.StructArray, raw: pa.StructArray) -> pa.StructArray:
    """Where a checkpoint has only ``stats_parsed``, rebuild the JSON ``stats`` from it.

    Only rows lacking JSON stats are converted (checkpoints written with
    ``delta.checkpoint.writeStatsAsJson=false``), so the common path stays columnar.
    """
    raw = raw.filter(raw.is_valid())
    stats = adds.field("stats")
    missing = pc.and_(stats.is_null(), raw.field("stats_parsed").is_valid())
    if not pc.any(missing).as_py():
        return adds
    parsed = raw.field("stats_parsed").to_pylist()
    rebuilt = [
        json.dumps(_maps_to_dicts(p), default=_stats_value, separators=(",", ":")) if m else s
        for p, m, s in zip(parsed, missing.to_pylist(), stats.to_pylist(), strict=False)
    ]
    children = [pa.array(rebuilt, pa.string()) if f.name == "stats" else adds.field(f.name) for f in A.ADD]
    return pa.StructArray.from_arrays(children, fields=list(A.ADD))


def _maps_to_dicts(value: Any) -> Any:
    """Arrow's to_pylist gives maps as lists of pairs; the JSON form has objects."""
    if isinstance(value, dict):
        return {k: _maps_to_dicts(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(p, tuple) and len(p) == 2 for p in value):
        return {k: v for k, v in value}
    return value

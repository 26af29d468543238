"""A stream's data files as Arrow record batches, in the rows' logical layout.

Runs in Spark's Python workers, which hand the batches to Spark as Arrow (never row by
row). A file's columns are found by physical name (or Parquet field id, in column mapping
``id`` mode) at any depth, renamed to the table's names and cast to the stream's types;
columns the file predates read as nulls; partition values come from the log; rows a
deletion vector marks are dropped; the change feed's columns are added.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...kernel.column_mapping import ID, PHYSICAL_NAME
from ...kernel.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from ...kernel.file_actions import storage_path
from ...kernel.partitions import typed_partition_values
from ...kernel.schema import StructType, parse_schema
from ...kernel.storage import Storage

CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP = "_change_type", "_commit_version", "_commit_timestamp"
CHANGE_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
_BATCH_ROWS = 1 << 20
_FIELD_ID = b"PARQUET:field_id"


@dataclass(frozen=True)
class RowLayout:
    """How a stream's rows are made from a file: the table's schema (physical names inside),
    its partition columns, whether fields are found by id, and the Arrow schema Spark expects."""

    schema_json: dict[str, Any]
    partition_columns: tuple[str, ...]
    by_field_id: bool
    output: pa.Schema

    @property
    def schema(self) -> StructType:
        return parse_schema(json.dumps(self.schema_json))


def _physical_key(field_json: Mapping[str, Any], by_field_id: bool) -> tuple[str, int | None]:
    metadata = field_json.get("metadata") or {}
    field_id = metadata.get(ID) if by_field_id else None
    return str(metadata.get(PHYSICAL_NAME, field_json["name"])), (int(field_id) if field_id is not None else None)


def _child(struct_type: pa.StructType, name: str, field_id: int | None) -> int | None:
    """The index of a file's field: by Parquet field id when given, else by name (exact, then any case)."""
    if field_id is not None:
        for i, f in enumerate(struct_type):
            if f.metadata and f.metadata.get(_FIELD_ID) == str(field_id).encode():
                return i
    index = struct_type.get_field_index(name)
    if index >= 0:
        return int(index)
    lowered = [i for i, f in enumerate(struct_type) if f.name.lower() == name.lower()]
    return lowered[0] if len(lowered) == 1 else None


def _conform(values: pa.Array[Any] | None, delta_type: Any, target: Any, n: int, by_field_id: bool) -> pa.Array[Any]:
    """``values`` (a file's column, or None when the file lacks it) as ``target``, renaming nested fields."""
    if values is None:
        return pa.nulls(n, target)
    if isinstance(delta_type, dict) and delta_type.get("type") == "struct" and pa.types.is_struct(values.type):
        struct = cast(pa.StructArray, values)
        children = []
        for field_json, target_field in zip(delta_type["fields"], target, strict=True):
            index = _child(struct.type, *_physical_key(field_json, by_field_id))
            child = struct.field(index) if index is not None else None
            children.append(_conform(child, field_json["type"], target_field.type, n, by_field_id))
        mask = pc.invert(struct.is_valid()) if struct.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if isinstance(delta_type, dict) and delta_type.get("type") == "array" and pa.types.is_list(values.type):
        listed = cast(pa.ListArray, values.cast(pa.list_(values.type.value_type)))
        flat = _conform(listed.values, delta_type["elementType"], target.value_type, len(listed.values), by_field_id)
        return pa.ListArray.from_arrays(
            listed.offsets, flat, type=target, mask=pc.invert(listed.is_valid()) if listed.null_count else None
        )
    if isinstance(delta_type, dict) and delta_type.get("type") == "map" and pa.types.is_map(values.type):
        mapped = cast(pa.MapArray, values)
        keys = _conform(mapped.keys, delta_type["keyType"], target.key_type, len(mapped.keys), by_field_id)
        items = _conform(mapped.items, delta_type["valueType"], target.item_type, len(mapped.items), by_field_id)
        return pa.MapArray.from_arrays(  # type: ignore[call-overload]
            mapped.offsets, keys, items, type=target, mask=pc.invert(mapped.is_valid()) if mapped.null_count else None
        )
    if values.type.equals(target):
        return values
    return values.cast(target, safe=not pa.types.is_timestamp(target))


def _open(storage: Storage, location: str) -> pq.ParquetFile:
    local = storage.local_path(location)
    return pq.ParquetFile(local if local is not None else pa.BufferReader(storage.read(location)))


def _kept_rows(storage: Storage, root: str, entry: Mapping[str, Any], location: str, num_rows: int) -> np.ndarray | None:
    """Which of the file's rows its deletion vector keeps (None: all)."""
    descriptor = entry.get("deletionVector")
    if not descriptor:
        return None
    keep = np.ones(num_rows, dtype=bool)
    keep[read_deletion_vector(storage, root, DeletionVectorDescriptor.from_dict(descriptor), location)] = False
    return keep


def _partition_scalars(entry: Mapping[str, Any], layout: RowLayout) -> dict[str, pa.Scalar[Any]]:
    if not layout.partition_columns:
        return {}
    raw = pa.array([list((entry.get("partitionValues") or {}).items())], pa.map_(pa.string(), pa.string()))
    typed = typed_partition_values(raw, layout.schema, layout.partition_columns)
    return {name.lower(): typed.column(name)[0] for name in typed.column_names}


def read_entry(storage: Storage, root: str, entry: Mapping[str, Any], layout: RowLayout) -> Iterator[pa.RecordBatch]:
    """The rows of one stream entry (a data or change file), batch by batch, as ``layout.output``."""
    location = storage_path(root, entry["path"])
    parquet = _open(storage, location)
    file_schema = parquet.schema_arrow
    kept = _kept_rows(storage, root, entry, location, parquet.metadata.num_rows)
    partitions = _partition_scalars(entry, layout)
    wanted: list[tuple[int | None, dict[str, Any]]] = []
    for field_json in layout.schema_json["fields"]:
        if field_json["name"].lower() in partitions:
            wanted.append((None, field_json))
            continue
        name, field_id = _physical_key(field_json, layout.by_field_id)
        wanted.append((_child(pa.struct(list(file_schema)), name, field_id), field_json))
    change_index = file_schema.get_field_index(CHANGE_TYPE)
    read_columns = sorted({i for i, _ in wanted if i is not None} | ({change_index} if change_index >= 0 else set()))
    column_names = [file_schema.field(i).name for i in read_columns]
    first_row = 0
    for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, columns=column_names, use_threads=False):
        n = batch.num_rows
        if kept is not None:
            batch = batch.filter(pa.array(kept[first_row : first_row + n]))
        first_row += n
        yield _output(batch, file_schema, wanted, partitions, entry, layout)


def _output(
    batch: pa.RecordBatch,
    file_schema: pa.Schema,
    wanted: list[tuple[int | None, dict[str, Any]]],
    partitions: Mapping[str, pa.Scalar[Any]],
    entry: Mapping[str, Any],
    layout: RowLayout,
) -> pa.RecordBatch:
    n = batch.num_rows
    columns: list[pa.Array[Any]] = []
    for (index, field_json), target in zip(wanted, layout.output, strict=False):
        scalar = partitions.get(field_json["name"].lower())
        if scalar is not None:
            columns.append(pa.repeat(cast(Any, scalar.cast(target.type)), n) if scalar.is_valid else pa.nulls(n, target.type))
            continue
        values = batch.column(file_schema.field(index).name) if index is not None else None
        columns.append(_conform(values, field_json["type"], target.type, n, layout.by_field_id))
    if layout.output.get_field_index(CHANGE_TYPE) >= 0:
        change = entry.get("change_type")
        columns.append(pa.repeat(pa.scalar(change), n) if change is not None else batch.column(CHANGE_TYPE).cast(pa.string()))
        columns.append(pa.repeat(pa.scalar(int(entry["version"]), pa.int64()), n))
        stamp = pa.scalar(int(entry["commit_timestamp"]) * 1000, pa.timestamp("us", tz="UTC"))
        columns.append(pa.repeat(stamp, n).cast(layout.output.field(COMMIT_TIMESTAMP).type))
    return pa.RecordBatch.from_arrays(columns, schema=layout.output)

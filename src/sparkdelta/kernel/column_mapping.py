"""Column mapping on the write side: ids and physical names for every column.

With ``delta.columnMapping.mode`` = ``name`` or ``id``, every field (nested ones too)
carries ``delta.columnMapping.id`` and ``delta.columnMapping.physicalName``; data files,
stats and partition values use the physical names, so a column can later be renamed or
dropped without rewriting data. ``delta.columnMapping.maxColumnId`` only grows, so an id
is never reused (PROTOCOL.md, "Writer Requirements for Column Mapping").

Assignment keeps what fields already have; it is the one place that invents ids and
physical names, and ``validate`` is the check every commit of mapped metadata passes.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

from .actions import Metadata
from .errors import InvalidTableOperationError
from .features import iter_fields
from .schema import ArrayType, DataType, MapType, StructField, StructType

MODE = "delta.columnMapping.mode"
MAX_COLUMN_ID = "delta.columnMapping.maxColumnId"
ID = "delta.columnMapping.id"
PHYSICAL_NAME = "delta.columnMapping.physicalName"
PARQUET_FIELD_ID = "parquet.field.id"
MODES = ("none", "name", "id")
# Keys only a table's own writer may set: a DataFrame read from another mapped table
# carries them, and they must not leak into a new table.
INTERNAL_FIELD_KEYS = (ID, PHYSICAL_NAME, PARQUET_FIELD_ID, "delta.columnMapping.nested.ids")


def mapping_mode(configuration: dict[str, str]) -> str:
    mode = str(configuration.get(MODE, "none")).strip().lower()
    if mode not in MODES:
        raise InvalidTableOperationError(f"unsupported column mapping mode {mode!r}: use none, name or id")
    return mode


def _type_without_metadata(data_type: DataType) -> DataType:
    if isinstance(data_type, StructType):
        return StructType(tuple(StructField(f.name.lower(), _type_without_metadata(f.type), True) for f in data_type.fields))
    if isinstance(data_type, ArrayType):
        return ArrayType(_type_without_metadata(data_type.element_type), True)
    if isinstance(data_type, MapType):
        return MapType(_type_without_metadata(data_type.key_type), _type_without_metadata(data_type.value_type), True)
    return data_type


def _children(data_type: DataType | None) -> dict[str, StructField]:
    """The fields of a struct by lower-cased name (none for other types)."""
    return {f.name.lower(): f for f in data_type.fields} if isinstance(data_type, StructType) else {}


class _Assigner:
    def __init__(self, max_id: int, upgrading: bool, reuse: bool) -> None:
        self.max_id = max_id
        self.upgrading = upgrading
        self.reuse = reuse

    def data_type(self, data_type: DataType, previous: DataType | None) -> DataType:
        if isinstance(data_type, StructType):
            known = _children(previous)
            return StructType(tuple(self.field(f, known.get(f.name.lower())) for f in data_type.fields))
        if isinstance(data_type, ArrayType):
            before = previous.element_type if isinstance(previous, ArrayType) else None
            return replace(data_type, element_type=self.data_type(data_type.element_type, before))
        if isinstance(data_type, MapType):
            keys = previous.key_type if isinstance(previous, MapType) else None
            values = previous.value_type if isinstance(previous, MapType) else None
            return replace(
                data_type,
                key_type=self.data_type(data_type.key_type, keys),
                value_type=self.data_type(data_type.value_type, values),
            )
        return data_type

    def field(self, field: StructField, previous: StructField | None) -> StructField:
        metadata = dict(field.metadata)
        reusable = (
            self.reuse
            and previous is not None
            and ID in previous.metadata
            and _type_without_metadata(previous.type) == _type_without_metadata(field.type)
        )
        if ID not in metadata:
            if reusable:
                assert previous is not None
                metadata[ID] = previous.metadata[ID]
            else:
                self.max_id += 1
                metadata[ID] = self.max_id
        if PHYSICAL_NAME not in metadata:
            if reusable:
                assert previous is not None
                metadata[PHYSICAL_NAME] = previous.metadata[PHYSICAL_NAME]
            elif self.upgrading:
                if previous is None:
                    raise InvalidTableOperationError(
                        f"cannot add column {field.name} while enabling column mapping: enable it first, then add columns"
                    )
                # Existing files use the display names: they become the physical names.
                metadata[PHYSICAL_NAME] = previous.name
            else:
                metadata[PHYSICAL_NAME] = f"col-{uuid.uuid4()}"
        nested = self.data_type(field.type, previous.type if previous is not None else None)
        return StructField(field.name, nested, field.nullable, metadata)


def max_column_id(schema: StructType) -> int:
    return max((int(f.metadata[ID]) for f in iter_fields(schema) if ID in f.metadata), default=0)


def assign(metadata: Metadata, previous: Metadata | None = None, overwrite_schema: bool = False) -> Metadata:
    """``metadata`` with column-mapping ids and physical names on every field that lacks them.

    ``previous`` is the table's metadata before this change: its maxColumnId is where new
    ids start; when it had no mapping (turning ``name`` mode on) the current names become
    the physical names; with ``overwrite_schema``, a column kept with the same name and
    type keeps its id and physical name. No-op when the mode is ``none``.
    """
    mode = mapping_mode(metadata.configuration)
    if mode == "none":
        return metadata
    previous_mode = mapping_mode(previous.configuration) if previous is not None else "none"
    upgrading = previous is not None and previous_mode == "none"
    if upgrading and mode != "name":
        raise InvalidTableOperationError(
            f"changing column mapping mode from 'none' to '{mode}' is not supported: an existing table can only move to 'name'"
        )
    schema = metadata.schema
    before = previous.schema if previous is not None else None
    start = max(
        int(metadata.configuration.get(MAX_COLUMN_ID, 0)),
        int(previous.configuration.get(MAX_COLUMN_ID, 0)) if previous is not None else 0,
        max_column_id(schema),
        max_column_id(before) if before is not None else 0,
    )
    assigner = _Assigner(start, upgrading, reuse=overwrite_schema and not upgrading)
    assigned = assigner.data_type(schema, before if upgrading or overwrite_schema else None)
    assert isinstance(assigned, StructType)
    configuration = {**metadata.configuration, MODE: mode, MAX_COLUMN_ID: str(assigner.max_id)}
    return replace(metadata, schema_string=assigned.json(), configuration=configuration)


def validate(metadata: Metadata, previous: Metadata | None, table: str) -> None:
    """Refuse mapped metadata with missing or duplicate ids or physical names, a maxColumnId
    below an id in use, or a mode change other than none -> name."""
    mode = mapping_mode(metadata.configuration)
    previous_mode = mapping_mode(previous.configuration) if previous is not None else mode
    if previous_mode != mode and not (previous_mode == "none" and mode == "name"):
        raise InvalidTableOperationError(
            f"{table}: changing column mapping mode from '{previous_mode}' to '{mode}' is not supported"
        )
    if mode == "none":
        return
    problems: list[str] = []
    ids: set[int] = set()
    _check_fields(metadata.schema, (), ids, problems)
    declared = int(metadata.configuration.get(MAX_COLUMN_ID, -1))
    if ids and declared < max(ids):
        problems.append(f"{MAX_COLUMN_ID} is {declared}, below the largest column id {max(ids)}")
    if previous is not None and declared < int(previous.configuration.get(MAX_COLUMN_ID, 0)):
        problems.append(f"{MAX_COLUMN_ID} went down from {previous.configuration[MAX_COLUMN_ID]} to {declared}")
    if problems:
        raise InvalidTableOperationError(f"{table}: invalid column mapping metadata ({mode} mode): {'; '.join(problems)}")


def _check_fields(data_type: DataType, parent: tuple[str, ...], ids: set[int], problems: list[str]) -> None:
    if isinstance(data_type, ArrayType):
        _check_fields(data_type.element_type, parent, ids, problems)
    elif isinstance(data_type, MapType):
        _check_fields(data_type.key_type, parent, ids, problems)
        _check_fields(data_type.value_type, parent, ids, problems)
    if not isinstance(data_type, StructType):
        return
    names: set[str] = set()
    for field in data_type.fields:
        path = ".".join((*parent, field.name))
        if ID not in field.metadata or PHYSICAL_NAME not in field.metadata:
            problems.append(f"column {path} has no {ID if ID not in field.metadata else PHYSICAL_NAME}")
        else:
            column_id = int(field.metadata[ID])
            if column_id in ids:
                problems.append(f"column id {column_id} is used twice (again by {path})")
            ids.add(column_id)
            physical = str(field.metadata[PHYSICAL_NAME]).lower()
            if physical in names:
                problems.append(f"physical name {field.metadata[PHYSICAL_NAME]} is used twice among siblings ({path})")
            names.add(physical)
        _check_fields(field.type, (*parent, field.name), ids, problems)

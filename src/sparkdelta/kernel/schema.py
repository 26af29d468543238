"""The Delta schema model: parsed from ``metaData.schemaString``, serialized back verbatim.

The JSON form is the spec's ("Schema Serialization Format"); field metadata is kept as
given because column mapping, generated columns, identity columns and type widening all
live there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from .errors import InvalidLogError

PRIMITIVE_TYPES = frozenset(
    {
        "string",
        "long",
        "integer",
        "short",
        "byte",
        "float",
        "double",
        "boolean",
        "binary",
        "date",
        "timestamp",
        "timestamp_ntz",
        "variant",
    }
)
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")


@dataclass(frozen=True)
class PrimitiveType:
    name: str

    def to_json(self) -> Any:
        return self.name


@dataclass(frozen=True)
class DecimalType:
    precision: int
    scale: int

    def to_json(self) -> Any:
        return f"decimal({self.precision},{self.scale})"


@dataclass(frozen=True)
class ArrayType:
    element_type: DataType
    contains_null: bool = True

    def to_json(self) -> Any:
        return {"type": "array", "elementType": self.element_type.to_json(), "containsNull": self.contains_null}


@dataclass(frozen=True)
class MapType:
    key_type: DataType
    value_type: DataType
    value_contains_null: bool = True

    def to_json(self) -> Any:
        return {
            "type": "map",
            "keyType": self.key_type.to_json(),
            "valueType": self.value_type.to_json(),
            "valueContainsNull": self.value_contains_null,
        }


@dataclass(frozen=True)
class StructField:
    name: str
    type: DataType
    nullable: bool = True
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type.to_json(), "nullable": self.nullable, "metadata": self.metadata}

    @property
    def physical_name(self) -> str:
        """The name in data files: the column-mapping name when mapping is on."""
        name: str = self.metadata.get("delta.columnMapping.physicalName", self.name)
        return name


@dataclass(frozen=True)
class StructType:
    fields: tuple[StructField, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"type": "struct", "fields": [f.to_json() for f in self.fields]}

    def json(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> StructField:
        """The field called ``name``, matched case-insensitively as Spark does."""
        for f in self.fields:
            if f.name == name:
                return f
        lowered = name.lower()
        for f in self.fields:
            if f.name.lower() == lowered:
                return f
        raise KeyError(name)


DataType = PrimitiveType | DecimalType | ArrayType | MapType | StructType


def parse_type(raw: Any) -> DataType:
    """Parse one type from its JSON form."""
    if isinstance(raw, str):
        if raw in PRIMITIVE_TYPES:
            return PrimitiveType(raw)
        match = _DECIMAL.fullmatch(raw)
        if match:
            return DecimalType(int(match.group(1)), int(match.group(2)))
        if raw == "decimal":
            return DecimalType(10, 0)
        return PrimitiveType(raw)
    if not isinstance(raw, dict):
        raise InvalidLogError(f"invalid type in schema: {raw!r}")
    kind = raw.get("type")
    if kind == "struct":
        return StructType(
            tuple(
                StructField(f["name"], parse_type(f["type"]), bool(f.get("nullable", True)), f.get("metadata") or {})
                for f in raw.get("fields", [])
            )
        )
    if kind == "array":
        return ArrayType(parse_type(raw["elementType"]), bool(raw.get("containsNull", True)))
    if kind == "map":
        return MapType(parse_type(raw["keyType"]), parse_type(raw["valueType"]), bool(raw.get("valueContainsNull", True)))
    raise InvalidLogError(f"invalid type in schema: {raw!r}")


def parse_schema(schema_string: str | None) -> StructType:
    """Parse ``schemaString``; a missing one (seen in old test logs) is an empty schema."""
    if not schema_string:
        return StructType()
    try:
        parsed = parse_type(json.loads(schema_string))
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidLogError(f"unparseable schemaString: {exc}") from exc
    if not isinstance(parsed, StructType):
        raise InvalidLogError("schemaString is not a struct")
    return parsed


_ARROW_PRIMITIVES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}


def to_arrow_type(data_type: DataType) -> pa.DataType:
    """The Arrow type Delta's Parquet files use for ``data_type``."""
    if isinstance(data_type, PrimitiveType):
        if data_type.name not in _ARROW_PRIMITIVES:
            raise InvalidLogError(f"type '{data_type.name}' has no Arrow equivalent here")
        return _ARROW_PRIMITIVES[data_type.name]
    if isinstance(data_type, DecimalType):
        return pa.decimal128(data_type.precision, data_type.scale)
    if isinstance(data_type, ArrayType):
        return pa.list_(pa.field("element", to_arrow_type(data_type.element_type), data_type.contains_null))
    if isinstance(data_type, MapType):
        return pa.map_(to_arrow_type(data_type.key_type), to_arrow_type(data_type.value_type))
    return pa.struct([pa.field(f.name, to_arrow_type(f.type), f.nullable) for f in data_type.fields])


def to_arrow_schema(schema: StructType) -> pa.Schema:
    return pa.schema([pa.field(f.name, to_arrow_type(f.type), f.nullable) for f in schema.fields])

"""The table-feature catalogue, and which features a table's metadata turns on.

Every feature has the legacy protocol versions that first implied it (``legacy``) or
needs table features (reader 3 / writer 7). A writer that changes metadata must make
the protocol support every feature the new metadata uses: a CHANGE DATA FEED property
needs ``changeDataFeed``, a ``timestamp_ntz`` column needs ``timestampNtz``, and so on
(PROTOCOL.md, "Table Features" and each feature's section).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .actions import Metadata
from .schema import ArrayType, DataType, MapType, PrimitiveType, StructField, StructType


@dataclass(frozen=True)
class TableFeature:
    name: str
    min_reader_version: int
    min_writer_version: int
    reader_writer: bool = False
    legacy: bool = False
    requires: tuple[str, ...] = ()


FEATURES: dict[str, TableFeature] = {
    f.name: f
    for f in (
        TableFeature("appendOnly", 1, 2, legacy=True),
        TableFeature("invariants", 1, 2, legacy=True),
        TableFeature("checkConstraints", 1, 3, legacy=True),
        TableFeature("changeDataFeed", 1, 4, legacy=True),
        TableFeature("generatedColumns", 1, 4, legacy=True),
        TableFeature("columnMapping", 2, 5, reader_writer=True, legacy=True),
        TableFeature("identityColumns", 1, 6, legacy=True),
        TableFeature("deletionVectors", 3, 7, reader_writer=True),
        TableFeature("timestampNtz", 3, 7, reader_writer=True),
        TableFeature("v2Checkpoint", 3, 7, reader_writer=True),
        TableFeature("vacuumProtocolCheck", 3, 7, reader_writer=True),
        TableFeature("typeWidening", 3, 7, reader_writer=True),
        TableFeature("typeWidening-preview", 3, 7, reader_writer=True),
        TableFeature("variantType", 3, 7, reader_writer=True),
        TableFeature("variantType-preview", 3, 7, reader_writer=True),
        TableFeature("catalogManaged", 3, 7, reader_writer=True),
        TableFeature("checkpointProtection", 1, 7),
        TableFeature("domainMetadata", 1, 7),
        TableFeature("inCommitTimestamp", 1, 7),
        TableFeature("rowTracking", 1, 7, requires=("domainMetadata",)),
        TableFeature("clustering", 1, 7, requires=("domainMetadata",)),
        TableFeature("allowColumnDefaults", 1, 7),
        TableFeature("icebergCompatV1", 1, 7, requires=("columnMapping",)),
        TableFeature("icebergCompatV2", 1, 7, requires=("columnMapping",)),
    )
}

# Boolean table properties that turn a feature on when "true".
_ENABLING_PROPERTIES = {
    "delta.appendOnly": "appendOnly",
    "delta.enableChangeDataFeed": "changeDataFeed",
    "delta.enableChangeDataCapture": "changeDataFeed",  # the legacy name
    "delta.enableDeletionVectors": "deletionVectors",
    "delta.enableInCommitTimestamps": "inCommitTimestamp",
    "delta.enableRowTracking": "rowTracking",
    "delta.enableTypeWidening": "typeWidening",
    "delta.enableIcebergCompatV1": "icebergCompatV1",
    "delta.enableIcebergCompatV2": "icebergCompatV2",
}
# A generated column's SQL expression, in its field metadata.
GENERATION_EXPRESSION = "delta.generationExpression"
# Field metadata keys that need a feature.
_FIELD_METADATA = {
    "delta.invariants": "invariants",
    GENERATION_EXPRESSION: "generatedColumns",
    "delta.identity.start": "identityColumns",
    "delta.identity.step": "identityColumns",
    "delta.identity.highWaterMark": "identityColumns",
    "delta.identity.allowExplicitInsert": "identityColumns",
    "CURRENT_DEFAULT": "allowColumnDefaults",
}
_TYPES = {"timestamp_ntz": "timestampNtz", "variant": "variantType"}


def is_true(configuration: dict[str, str], key: str) -> bool:
    return str(configuration.get(key, "false")).strip().lower() == "true"


def iter_fields(data_type: DataType) -> Iterator[StructField]:
    """Every struct field in ``data_type``, nested ones (in structs, arrays, maps) included."""
    if isinstance(data_type, StructType):
        for field in data_type.fields:
            yield field
            yield from iter_fields(field.type)
    elif isinstance(data_type, ArrayType):
        yield from iter_fields(data_type.element_type)
    elif isinstance(data_type, MapType):
        yield from iter_fields(data_type.key_type)
        yield from iter_fields(data_type.value_type)


def _primitive_names(data_type: DataType) -> Iterator[str]:
    if isinstance(data_type, PrimitiveType):
        yield data_type.name
    elif isinstance(data_type, StructType):
        for field in data_type.fields:
            yield from _primitive_names(field.type)
    elif isinstance(data_type, ArrayType):
        yield from _primitive_names(data_type.element_type)
    elif isinstance(data_type, MapType):
        yield from _primitive_names(data_type.key_type)
        yield from _primitive_names(data_type.value_type)


def metadata_features(metadata: Metadata) -> frozenset[str]:
    """The features this metadata uses, so the protocol must support them."""
    config = metadata.configuration
    used = {feature for key, feature in _ENABLING_PROPERTIES.items() if is_true(config, key)}
    if any(key.lower().startswith("delta.constraints.") for key in config):
        used.add("checkConstraints")
    if str(config.get("delta.columnMapping.mode", "none")).lower() in ("name", "id"):
        used.add("columnMapping")
    if str(config.get("delta.checkpointPolicy", "classic")).lower() == "v2":
        used.add("v2Checkpoint")
    schema = metadata.schema
    for field in iter_fields(schema):
        used.update(feature for key, feature in _FIELD_METADATA.items() if key in field.metadata)
    used.update(_TYPES[name] for name in _primitive_names(schema) if name in _TYPES)
    return frozenset(used)


def with_dependencies(features: frozenset[str]) -> frozenset[str]:
    """``features`` plus every feature they require, transitively."""
    result = set(features)
    pending = list(features)
    while pending:
        known = FEATURES.get(pending.pop())
        for needed in known.requires if known else ():
            if needed not in result:
                result.add(needed)
                pending.append(needed)
    return frozenset(result)

"""Delta log actions: typed non-file actions, and the Arrow layout of file actions.

Non-file actions (protocol, metaData, txn, domainMetadata, commitInfo) are few per
commit and are plain dataclasses. File actions (add, remove, cdc) can number millions,
so on the read path they only exist as Arrow columns shaped like delta-spark's checkpoint
schema; the dataclasses below are for writers building a commit.

Unknown fields are tolerated on read and dropped; unknown action kinds are ignored,
as the spec requires.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from .schema import StructType, parse_schema

STRING_MAP = pa.map_(pa.string(), pa.string())

DELETION_VECTOR = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
)

ADD = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", STRING_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("tags", STRING_MAP),
        ("deletionVector", DELETION_VECTOR),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
        ("clusteringProvider", pa.string()),
    ]
)

REMOVE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", STRING_MAP),
        ("size", pa.int64()),
        ("stats", pa.string()),
        ("tags", STRING_MAP),
        ("deletionVector", DELETION_VECTOR),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
)

# The spec's checkpoint remove struct carries neither stats nor tags.
REMOVE_IN_CHECKPOINT = pa.struct([f for f in REMOVE if f.name not in ("stats", "tags")])

CDC = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", STRING_MAP),
        ("size", pa.int64()),
        ("dataChange", pa.bool_()),
        ("tags", STRING_MAP),
    ]
)

FILE_ACTIONS: dict[str, pa.StructType] = {"add": ADD, "remove": REMOVE, "cdc": CDC}

# The checkpoint layout delta-spark writes (classic checkpoints), non-file parts.
TXN = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
PROTOCOL = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)
METADATA = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", STRING_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", STRING_MAP),
        ("createdTime", pa.int64()),
    ]
)
DOMAIN_METADATA = pa.struct([("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())])

CHECKPOINT_METADATA = pa.struct([("version", pa.int64()), ("tags", STRING_MAP)])

CHECKPOINT_SCHEMA = pa.schema(
    [
        ("txn", TXN),
        ("add", ADD),
        ("remove", REMOVE_IN_CHECKPOINT),
        ("metaData", METADATA),
        ("protocol", PROTOCOL),
        ("domainMetadata", DOMAIN_METADATA),
    ]
)
# With the v2Checkpoint feature a classic-named checkpoint must carry checkpointMetadata.
V2_CHECKPOINT_SCHEMA = CHECKPOINT_SCHEMA.append(pa.field("checkpointMetadata", CHECKPOINT_METADATA))


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


@dataclass(frozen=True)
class Protocol:
    min_reader_version: int
    min_writer_version: int
    reader_features: frozenset[str] | None = None
    writer_features: frozenset[str] | None = None

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Protocol:
        reader = raw.get("readerFeatures")
        writer = raw.get("writerFeatures")
        return cls(
            int(raw.get("minReaderVersion", 1)),
            int(raw.get("minWriterVersion", 2)),
            frozenset(reader) if reader is not None else None,
            frozenset(writer) if writer is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        reader = self.reader_features if self.reader_features is not None or self.min_reader_version < 3 else frozenset()
        writer = self.writer_features if self.writer_features is not None or self.min_writer_version < 7 else frozenset()
        return _drop_none(
            {
                "minReaderVersion": self.min_reader_version,
                "minWriterVersion": self.min_writer_version,
                "readerFeatures": sorted(reader) if reader is not None else None,
                "writerFeatures": sorted(writer) if writer is not None else None,
            }
        )


@dataclass(frozen=True)
class Metadata:
    id: str
    schema_string: str | None
    partition_columns: tuple[str, ...] = ()
    configuration: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    name: str | None = None
    description: str | None = None
    format_provider: str = "parquet"
    format_options: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    created_time: int | None = None

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Metadata:
        fmt = raw.get("format") or {}
        return cls(
            id=raw.get("id") or "",
            schema_string=raw.get("schemaString"),
            partition_columns=tuple(raw.get("partitionColumns") or ()),
            configuration=dict(raw.get("configuration") or {}),
            name=raw.get("name"),
            description=raw.get("description"),
            format_provider=fmt.get("provider") or "parquet",
            format_options=dict(fmt.get("options") or {}),
            created_time=raw.get("createdTime"),
        )

    def to_dict(self) -> dict[str, Any]:
        return _drop_none(
            {
                "id": self.id,
                "name": self.name,
                "description": self.description,
                "format": {"provider": self.format_provider, "options": self.format_options},
                "schemaString": self.schema_string,
                "partitionColumns": list(self.partition_columns),
                "configuration": self.configuration,
                "createdTime": self.created_time,
            }
        )

    @property
    def schema(self) -> StructType:
        return parse_schema(self.schema_string)


@dataclass(frozen=True)
class SetTransaction:
    """``txn``: the last version an application committed, for idempotent writes."""

    app_id: str
    version: int
    last_updated: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({"appId": self.app_id, "version": self.version, "lastUpdated": self.last_updated})


@dataclass(frozen=True)
class DomainMetadata:
    domain: str
    configuration: str
    removed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"domain": self.domain, "configuration": self.configuration, "removed": self.removed}


@dataclass(frozen=True)
class AddFile:
    """An ``add`` action built by a writer. ``path`` is relative to the table, URL-encoded."""

    path: str
    partition_values: dict[str, str | None]
    size: int
    modification_time: int
    data_change: bool = True
    stats: str | None = None
    tags: dict[str, str] | None = None
    deletion_vector: dict[str, Any] | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    clustering_provider: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return _drop_none(
            {
                "path": self.path,
                "partitionValues": self.partition_values,
                "size": self.size,
                "modificationTime": self.modification_time,
                "dataChange": self.data_change,
                "stats": self.stats,
                "tags": self.tags,
                "deletionVector": self.deletion_vector,
                "baseRowId": self.base_row_id,
                "defaultRowCommitVersion": self.default_row_commit_version,
                "clusteringProvider": self.clustering_provider,
            }
        )


@dataclass(frozen=True)
class RemoveFile:
    path: str
    deletion_timestamp: int | None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    partition_values: dict[str, str | None] | None = None
    size: int | None = None
    stats: str | None = None
    tags: dict[str, str] | None = None
    deletion_vector: dict[str, Any] | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return _drop_none(
            {
                "path": self.path,
                "deletionTimestamp": self.deletion_timestamp,
                "dataChange": self.data_change,
                "extendedFileMetadata": self.extended_file_metadata,
                "partitionValues": self.partition_values,
                "size": self.size,
                "stats": self.stats,
                "tags": self.tags,
                "deletionVector": self.deletion_vector,
                "baseRowId": self.base_row_id,
                "defaultRowCommitVersion": self.default_row_commit_version,
            }
        )


@dataclass(frozen=True)
class AddCDCFile:
    path: str
    partition_values: dict[str, str | None]
    size: int
    data_change: bool = False
    tags: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return _drop_none(
            {
                "path": self.path,
                "partitionValues": self.partition_values,
                "size": self.size,
                "dataChange": self.data_change,
                "tags": self.tags,
            }
        )


Action = Protocol | Metadata | SetTransaction | DomainMetadata | AddFile | RemoveFile | AddCDCFile

_ACTION_KEYS: dict[type, str] = {
    Protocol: "protocol",
    Metadata: "metaData",
    SetTransaction: "txn",
    DomainMetadata: "domainMetadata",
    AddFile: "add",
    RemoveFile: "remove",
    AddCDCFile: "cdc",
}


def action_line(action: Action) -> str:
    """One newline-delimited JSON line of a commit file."""
    return json.dumps({_ACTION_KEYS[type(action)]: action.to_dict()}, separators=(",", ":"))

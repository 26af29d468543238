"""Protocol versions and table features: what a table needs, and whether we provide it.

Legacy protocols (reader < 3, writer < 7) imply a fixed feature set per version; from
reader 3 / writer 7 the table lists its features by name. A reader or writer must refuse a
table that needs anything it does not implement, naming what is missing.

The kernel's sets cover log replay and commits. An engine that reads or writes data may
support less (say, no column-mapping reads yet) and passes its own set to the checks.
"""

from __future__ import annotations

from .actions import Metadata, Protocol
from .errors import InvalidTableOperationError, UnsupportedFeatureError

# Features implied by legacy versions (PROTOCOL.md, "Table Features").
LEGACY_WRITER_FEATURES: dict[int, frozenset[str]] = {
    1: frozenset(),
    2: frozenset({"appendOnly", "invariants"}),
    3: frozenset({"appendOnly", "invariants", "checkConstraints"}),
    4: frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"}),
    5: frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping"}),
    6: frozenset(
        {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping", "identityColumns"}
    ),
}
LEGACY_READER_FEATURES: dict[int, frozenset[str]] = {1: frozenset(), 2: frozenset({"columnMapping"})}

# Reader features whose log-level meaning the kernel's replay implements.
KERNEL_READER_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "variantShredding-preview",
    }
)

# Writer features the kernel's commit path honours (enforced here or by the engine).
KERNEL_WRITER_FEATURES = frozenset(
    {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
        "timestampNtz",
        "domainMetadata",
        "vacuumProtocolCheck",
        "inCommitTimestamp",
        "v2Checkpoint",
    }
)

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7


def reader_features(protocol: Protocol) -> frozenset[str]:
    """Features a reader of this table must support."""
    if protocol.min_reader_version >= 3:
        return protocol.reader_features or frozenset()
    return LEGACY_READER_FEATURES.get(protocol.min_reader_version, frozenset())


def writer_features(protocol: Protocol) -> frozenset[str]:
    """Features a writer of this table must support."""
    if protocol.min_writer_version >= 7:
        return protocol.writer_features or frozenset()
    return LEGACY_WRITER_FEATURES.get(protocol.min_writer_version, frozenset())


def _describe(protocol: Protocol) -> str:
    return f"minReaderVersion={protocol.min_reader_version}, minWriterVersion={protocol.min_writer_version}"


def check_protocol_valid(protocol: Protocol, table: str) -> None:
    """Reject protocols that break the spec's shape rules or that we cannot read at all."""
    if protocol.min_reader_version > MAX_READER_VERSION or protocol.min_reader_version < 1:
        raise UnsupportedFeatureError(
            f"{table}: unsupported Delta protocol ({_describe(protocol)}): "
            f"this library reads reader versions 1 to {MAX_READER_VERSION}"
        )


def require_readable(
    protocol: Protocol, table: str, supported: frozenset[str] = KERNEL_READER_FEATURES, what: str = "read"
) -> None:
    """Raise ``UnsupportedFeatureError`` naming every reader feature we lack."""
    check_protocol_valid(protocol, table)
    missing = reader_features(protocol) - supported
    if missing:
        raise UnsupportedFeatureError(
            f"{table}: cannot {what} this table: it uses table feature(s) {', '.join(sorted(missing))} "
            f"({_describe(protocol)}), which this library does not support yet",
            frozenset(missing),
        )


def require_writable(
    protocol: Protocol,
    metadata: Metadata | None,
    table: str,
    supported_writer: frozenset[str] = KERNEL_WRITER_FEATURES,
) -> None:
    """Raise ``UnsupportedFeatureError`` unless we can write this table correctly."""
    require_readable(protocol, table, what="write")
    if protocol.min_writer_version > MAX_WRITER_VERSION:
        raise UnsupportedFeatureError(
            f"{table}: unsupported Delta protocol ({_describe(protocol)}): "
            f"this library writes writer versions up to {MAX_WRITER_VERSION}"
        )
    needed = writer_features(protocol)
    if metadata is not None and protocol.min_writer_version < 7:
        # Legacy versions imply features; only those actually in use need support.
        needed = needed & _features_in_use(metadata)
    missing = needed - supported_writer
    if missing:
        raise UnsupportedFeatureError(
            f"{table}: cannot write this table: it uses table feature(s) {', '.join(sorted(missing))} "
            f"({_describe(protocol)}), which this library cannot write yet",
            frozenset(missing),
        )


def _features_in_use(metadata: Metadata) -> frozenset[str]:
    """Legacy-implied features the metadata actually turns on."""
    config = metadata.configuration
    schema_json = metadata.schema_string or ""
    used = {"appendOnly", "invariants", "checkConstraints"}
    if config.get("delta.enableChangeDataFeed", "false").lower() == "true":
        used.add("changeDataFeed")
    if "delta.generationExpression" in schema_json:
        used.add("generatedColumns")
    if config.get("delta.columnMapping.mode", "none") != "none":
        used.add("columnMapping")
    if "delta.identity." in schema_json:
        used.add("identityColumns")
    return frozenset(used)


def check_protocol_shape(protocol: Protocol, table: str) -> None:
    """The spec's rules for a protocol action a writer may commit.

    Missing feature lists at reader 3 / writer 7 are written as empty lists (``to_dict``).
    """
    problems = []
    if protocol.min_reader_version == 3 and protocol.min_writer_version != 7:
        problems.append("reader version 3 needs writer version 7")
    if protocol.min_reader_version < 3 and protocol.reader_features:
        problems.append("readerFeatures need reader version 3")
    if protocol.min_writer_version < 7 and protocol.writer_features:
        problems.append("writerFeatures need writer version 7")
    only_read = (protocol.reader_features or frozenset()) - (protocol.writer_features or frozenset())
    if only_read:
        problems.append(f"reader features {', '.join(sorted(only_read))} must also be writer features")
    if problems:
        raise InvalidTableOperationError(f"{table}: invalid protocol ({_describe(protocol)}): {'; '.join(problems)}")


def check_no_feature_removed(old: Protocol, new: Protocol, table: str) -> None:
    """A protocol change may add features, never drop them (dropping has its own procedure)."""
    dropped = (reader_features(old) - reader_features(new)) | (writer_features(old) - writer_features(new))
    if new.min_reader_version < old.min_reader_version or new.min_writer_version < old.min_writer_version:
        dropped |= {f"protocol version ({_describe(old)})"}
    if dropped:
        raise InvalidTableOperationError(
            f"{table}: the new protocol ({_describe(new)}) drops {', '.join(sorted(dropped))}; "
            "protocol changes may only add table features"
        )


def is_feature_enabled(protocol: Protocol, feature: str) -> bool:
    return feature in writer_features(protocol) or feature in reader_features(protocol)

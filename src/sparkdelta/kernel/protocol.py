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
from .features import FEATURES, metadata_features, with_dependencies

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

# Writer features the kernel's commit path honours (enforced here or by the engine):
# column-mapping metadata is validated on every commit, data files are the engine's.
# Clustering: the clustering domain is kept by ``clustering.py``; appends are unclustered.
# Deletion vectors: the kernel writes DV files (``deletion_vectors.py``) and an add with a
# DV keeps its stats' ``numRecords``, the spec's one writer requirement.
# Checkpoint protection: log cleanup never creates checkpoints and never deletes one at or
# above the version it truncates to (exception (a) of the feature's writer rule).
# Variant: Spark's Parquet writer stores a variant unshredded (a struct of ``value`` and
# ``metadata`` binaries), the spec's one writer rule; the engine's writes turn Spark's
# shredding off per write. Stats hold no bounds for it. Type widening: ALTER COLUMN ... TYPE checks the
# property and records ``delta.typeChanges`` (``spark/alter.py``); files keep their types.
# Identity columns: the engine generates the values and moves the high-water marks
# (``spark/write/identity.py``); RESTORE and CLONE keep marks from going back (``identity.py``).
# Column defaults: the engine's writes evaluate a column's CURRENT_DEFAULT where they give no value.
# Row tracking: every commit assigns row ids and moves the mark (``row_tracking.py``); rewrites
# of a table with it enabled preserve ids in the materialized columns (``spark/row_tracking.py``).
KERNEL_WRITER_FEATURES = frozenset(
    {
        "appendOnly",
        "checkpointProtection",
        "clustering",
        "deletionVectors",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
        "columnMapping",
        "identityColumns",
        "timestampNtz",
        "domainMetadata",
        "vacuumProtocolCheck",
        "inCommitTimestamp",
        "v2Checkpoint",
        "variantType",
        "variantType-preview",
        "typeWidening",
        "typeWidening-preview",
        "rowTracking",
        "allowColumnDefaults",
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
    return _implied_writer_features(protocol.min_reader_version, protocol.min_writer_version)


def _implied_writer_features(reader: int, writer: int) -> frozenset[str]:
    """The features legacy versions imply, as delta-spark reads them: a writer version gives a
    reader-writer feature only with the reader version it needs (writer 6 at reader 1 has no
    column mapping)."""
    implied = LEGACY_WRITER_FEATURES.get(min(writer, 6), frozenset())
    return frozenset(f for f in implied if f not in FEATURES or FEATURES[f].min_reader_version <= reader)


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
            error_class="DELTA_UNSUPPORTED_FEATURES_FOR_WRITE" if what == "write" else None,
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
            error_class="DELTA_UNSUPPORTED_FEATURES_FOR_WRITE",
        )


def _features_in_use(metadata: Metadata) -> frozenset[str]:
    """Legacy-implied features the metadata actually turns on (appendOnly, invariants and
    CHECK constraints are checked on every write, so count as always in use)."""
    return metadata_features(metadata) | {"appendOnly", "invariants", "checkConstraints"}


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


def check_no_feature_removed(old: Protocol, new: Protocol, table: str, dropping: str | None = None) -> None:
    """A protocol change may add features, never drop them, except the one ``dropping``
    names (DROP FEATURE, ``drop_feature.py``). Lower versions that support every feature the
    old ones did are allowed: delta-spark writes table features as legacy versions when some
    legacy protocol supports exactly them ((1, 7) listing (1, 4)'s features and
    ``checkConstraints`` becomes (1, 4))."""
    dropped = ((reader_features(old) - reader_features(new)) | (writer_features(old) - writer_features(new))) - {dropping}
    if dropped:
        raise InvalidTableOperationError(
            f"{table}: the new protocol ({_describe(new)}) drops {', '.join(sorted(dropped))}; "
            "protocol changes may only add table features"
        )


def is_feature_enabled(protocol: Protocol, feature: str) -> bool:
    return feature in writer_features(protocol) or feature in reader_features(protocol)


# Table properties that set the protocol; they never reach the stored configuration.
MIN_READER_VERSION_PROP = "delta.minReaderVersion"
MIN_WRITER_VERSION_PROP = "delta.minWriterVersion"
FEATURE_PROP_PREFIX = "delta.feature."
IGNORE_PROTOCOL_DEFAULTS_PROP = "delta.ignoreProtocolDefaults"
# What a new table starts from (delta-spark's session defaults).
DEFAULT_PROTOCOL = Protocol(1, 2)


def is_protocol_property(key: str) -> bool:
    lowered = key.lower()
    return lowered in (
        MIN_READER_VERSION_PROP.lower(),
        MIN_WRITER_VERSION_PROP.lower(),
        IGNORE_PROTOCOL_DEFAULTS_PROP.lower(),
    ) or (lowered.startswith(FEATURE_PROP_PREFIX))


def without_protocol_properties(configuration: dict[str, str]) -> dict[str, str]:
    """The configuration to store: protocol versions and features live in the protocol action."""
    return {k: v for k, v in configuration.items() if not is_protocol_property(k)}


def _property(configuration: dict[str, str], key: str) -> str | None:
    return next((v for k, v in configuration.items() if k.lower() == key.lower()), None)


def _version(configuration: dict[str, str], key: str, highest: int) -> int | None:
    raw = _property(configuration, key)
    if raw is None:
        return None
    try:
        version = int(str(raw).strip())
    except ValueError:
        version = 0
    if not 1 <= version <= highest:
        raise InvalidTableOperationError(f"{key} must be an integer from 1 to {highest}, not {raw!r}")
    return version


def _requested_features(configuration: dict[str, str]) -> frozenset[str]:
    """Features named by ``delta.feature.<name> = supported`` properties."""
    requested = set()
    by_lower_name = {name.lower(): name for name in FEATURES}
    for key, value in configuration.items():
        if not key.lower().startswith(FEATURE_PROP_PREFIX):
            continue
        name = key[len(FEATURE_PROP_PREFIX) :]
        if str(value).lower() not in ("supported", "enabled"):
            raise InvalidTableOperationError(f"{key}: a table feature property takes the value 'supported', not {value!r}")
        if name.lower() not in by_lower_name:
            raise UnsupportedFeatureError(
                "Table features configured in the following Spark configs or Delta table properties are not "
                f"recognized by this version of Delta Lake: {key}.",
                frozenset({name}),
                error_class="DELTA_UNSUPPORTED_FEATURES_IN_CONFIG",
            )
        requested.add(by_lower_name[name.lower()])
    return frozenset(requested)


def _legacy_features(reader: int, writer: int) -> frozenset[str]:
    """Every feature legacy versions support together: column mapping needs reader 2 and writer 5."""
    return _implied_writer_features(reader, writer)


def supported_features(protocol: Protocol) -> frozenset[str]:
    """Every feature the protocol supports, reader and writer, listed or implied by version."""
    return reader_features(protocol) | writer_features(protocol)


def _is_reader_writer(name: str, current: Protocol) -> bool:
    known = FEATURES.get(name)
    return known.reader_writer if known else name in (current.reader_features or frozenset())


def required_protocol(metadata: Metadata, current: Protocol | None) -> Protocol:
    """The lowest protocol that supports everything ``metadata`` uses, never below ``current``.

    The features are those ``current`` supports (a new table: delta-spark's default (1, 2),
    or (1, 1) with ``delta.ignoreProtocolDefaults``) and those the metadata needs. As in
    delta-spark, they are written as legacy versions only when some legacy protocol
    supports exactly that set (check constraints on a (1, 2) table give (1, 3)); otherwise as
    table features (change data feed on a new table gives (1, 7) with ``changeDataFeed``,
    ``appendOnly`` and ``invariants``). ``delta.minReaderVersion``/``delta.minWriterVersion``
    replace a new table's defaults and add their implied features to an existing table's;
    ``delta.feature.*`` properties add features. Returns ``current`` itself when it suffices.
    """
    config = metadata.configuration
    wanted_reader = _version(config, MIN_READER_VERSION_PROP, MAX_READER_VERSION)
    wanted_writer = _version(config, MIN_WRITER_VERSION_PROP, MAX_WRITER_VERSION)
    if wanted_reader == 3 and (wanted_writer or (current.min_writer_version if current else 0)) < 7:
        raise InvalidTableOperationError(f"{MIN_READER_VERSION_PROP}=3 needs {MIN_WRITER_VERSION_PROP}=7")
    needed = set(with_dependencies(metadata_features(metadata) | _requested_features(config)))
    if current is None:
        ignore_defaults = str(_property(config, IGNORE_PROTOCOL_DEFAULTS_PROP) or "false").lower() == "true"
        default = Protocol(1, 1) if ignore_defaults else DEFAULT_PROTOCOL
        base = Protocol(wanted_reader or default.min_reader_version, wanted_writer or default.min_writer_version)
        legacy = base.min_writer_version < 7
        base_features = _legacy_features(base.min_reader_version, base.min_writer_version) if legacy else frozenset()
    else:
        base = current
        base_features = supported_features(current)
        if wanted_writer is not None and wanted_writer < 7:
            needed |= _legacy_features(wanted_reader or 1, wanted_writer)
    known_reader_writer = frozenset(f for f in base_features | needed if _is_reader_writer(f, base))
    result = lowest_protocol(frozenset(base_features | needed), known_reader_writer)
    if (
        current is not None
        and supported_features(result) <= supported_features(current)
        and (result.min_reader_version <= current.min_reader_version and result.min_writer_version <= current.min_writer_version)
    ):
        return current
    return result


def lowest_protocol(features: frozenset[str], reader_writer: frozenset[str] | None = None) -> Protocol:
    """The lowest protocol supporting exactly ``features``: legacy versions when they imply
    that set (delta-spark's normalisation), else table features, at reader 3 only for a
    reader-writer feature legacy readers lack. ``reader_writer``: the reader-writer features
    among ``features``, for names this library does not know."""
    for writer in range(1, 7):
        for reader in (1, 2) if writer >= 5 else (1,):
            if _legacy_features(reader, writer) == features:
                return Protocol(reader, writer)
    if reader_writer is None:
        reader_writer = frozenset(f for f in features if f in FEATURES and FEATURES[f].reader_writer)
    if any(f not in FEATURES or not FEATURES[f].legacy for f in reader_writer):
        return Protocol(3, 7, reader_writer, features)
    return Protocol(2 if reader_writer else 1, 7, None, features)

"""Delta table properties a user sets: canonical spelling and valid values.

Property keys are case-insensitive to users (``option("delta.enablechangedatafeed", ...)``
works) but stored in delta-spark's spelling, which other readers look up verbatim. A bad
value is refused before anything is written: a table with ``delta.appendOnly=yes``
would be read as not append-only by one engine and rejected by another. Unknown
``delta.*`` keys are refused as delta-spark refuses them (a typo would otherwise pass
silently), unless arbitrary properties are allowed.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .errors import InvalidTablePropertyError

_INTERVAL = re.compile(
    r"\s*(interval\s+)?(\d+\s*(weeks?|days?|hours?|minutes?|seconds?|milliseconds?|microseconds?)\s*)+",
    re.IGNORECASE,
)


def _boolean(value: str) -> bool:
    return value.strip().lower() in ("true", "false")


def _integer(low: int, high: int | None = None) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            number = int(value.strip())
        except ValueError:
            return False
        return number >= low and (high is None or number <= high)

    return check


def _one_of(*choices: str) -> Callable[[str], bool]:
    return lambda value: value.strip().lower() in {c.lower() for c in choices}


def _interval(value: str) -> bool:
    return _INTERVAL.fullmatch(value) is not None


def _any(value: str) -> bool:
    return True


_BOOLEAN = (_boolean, "needs to be a boolean (true or false)")
_INTERVAL_RULE = (_interval, "needs to be a calendar interval such as 'interval 2 weeks' (no months or years)")

# Canonical key -> (validator, what a valid value is).
KNOWN_PROPERTIES: dict[str, tuple[Callable[[str], bool], str]] = {
    "delta.appendOnly": _BOOLEAN,
    "delta.enableChangeDataFeed": _BOOLEAN,
    "delta.enableChangeDataCapture": _BOOLEAN,
    "delta.enableDeletionVectors": _BOOLEAN,
    "delta.enableInCommitTimestamps": _BOOLEAN,
    "delta.enableRowTracking": _BOOLEAN,
    "delta.enableTypeWidening": _BOOLEAN,
    "delta.enableIcebergCompatV1": _BOOLEAN,
    "delta.enableIcebergCompatV2": _BOOLEAN,
    "delta.enableVariantShredding": _BOOLEAN,
    "delta.enableExpiredLogCleanup": _BOOLEAN,
    "delta.enableFullRetentionRollback": _BOOLEAN,
    "delta.checkpoint.writeStatsAsJson": _BOOLEAN,
    "delta.checkpoint.writeStatsAsStruct": _BOOLEAN,
    "delta.randomizeFilePrefixes": _BOOLEAN,
    "delta.compatibility.symlinkFormatManifest.enabled": _BOOLEAN,
    "delta.autoOptimize.optimizeWrite": _BOOLEAN,
    "delta.autoOptimize.autoCompact": (_one_of("true", "false", "auto", "legacy"), "needs to be true, false, auto or legacy"),
    "delta.tuneFileSizesForRewrites": _BOOLEAN,
    "delta.ignoreProtocolDefaults": _BOOLEAN,
    "delta.checkpointInterval": (_integer(1), "needs to be a positive integer"),
    "delta.dataSkippingNumIndexedCols": (_integer(-1), "needs to be an integer, -1 (all columns) or more"),
    "delta.dataSkippingStatsColumns": (_any, ""),
    "delta.randomPrefixLength": (_integer(1), "needs to be a positive integer"),
    "delta.targetFileSize": (_any, ""),
    "delta.minReaderVersion": (_integer(1, 3), "needs to be one of 1, 2, 3"),
    "delta.minWriterVersion": (_integer(1, 7), "needs to be one of 1, 2, 3, 4, 5, 6, 7"),
    "delta.logRetentionDuration": _INTERVAL_RULE,
    "delta.deletedFileRetentionDuration": _INTERVAL_RULE,
    "delta.checkpointRetentionDuration": _INTERVAL_RULE,
    "delta.sampleRetentionDuration": _INTERVAL_RULE,
    "delta.setTransactionRetentionDuration": _INTERVAL_RULE,
    "delta.dropFeatureTruncateHistory.retentionDuration": _INTERVAL_RULE,
    "delta.columnMapping.mode": (_one_of("none", "name", "id"), "needs to be none, name or id"),
    "delta.isolationLevel": (_one_of("Serializable", "WriteSerializable"), "needs to be Serializable or WriteSerializable"),
    "delta.checkpointPolicy": (_one_of("classic", "v2"), "needs to be classic or v2"),
    "delta.parquet.compression.codec": (
        _one_of("uncompressed", "none", "snappy", "gzip", "lz4", "lz4_raw", "zstd"),
        "needs to be one of uncompressed, none, snappy, gzip, lz4, lz4_raw, zstd",
    ),
    "delta.universalFormat.enabledFormats": (
        _one_of("", "iceberg", "hudi", "iceberg,hudi", "hudi,iceberg"),
        "lists iceberg and/or hudi",
    ),
}
# Set by writers only (delta-spark: "cannot be set by users").
INTERNAL_PROPERTIES = frozenset(
    {
        "delta.columnMapping.maxColumnId",
        "delta.inCommitTimestampEnablementVersion",
        "delta.inCommitTimestampEnablementTimestamp",
        "delta.rowTracking.materializedRowIdColumnName",
        "delta.rowTracking.materializedRowCommitVersionColumnName",
    }
)
# Families of keys whose suffix is free: constraint names, feature names, format settings.
_FREE_PREFIXES = ("delta.constraints.", "delta.feature.", "delta.universalformat.config.")
_CANONICAL = {key.lower(): key for key in [*KNOWN_PROPERTIES, *INTERNAL_PROPERTIES]}


def normalize_properties(properties: dict[str, str], table: str, allow_arbitrary: bool = False) -> dict[str, str]:
    """User-given properties with ``delta.*`` keys spelled canonically and values checked.

    Keys outside ``delta.`` (user properties such as ``owner``) pass unchanged.
    """
    result: dict[str, str] = {}
    for key, value in properties.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        lowered = key.lower()
        if not lowered.startswith("delta."):
            result[key] = text
        elif lowered.startswith(_FREE_PREFIXES):
            result[lowered if lowered.startswith("delta.feature.") else key] = text
        elif lowered in _CANONICAL:
            canonical = _CANONICAL[lowered]
            if canonical in INTERNAL_PROPERTIES:
                raise InvalidTablePropertyError(f"{table}: {canonical} is managed by Delta and cannot be set by users")
            check, expected = KNOWN_PROPERTIES[canonical]
            if not check(text):
                raise InvalidTablePropertyError(f"{table}: invalid value {text!r} for table property {canonical}: it {expected}")
            result[canonical] = text
        elif allow_arbitrary:
            result[key] = text
        else:
            raise InvalidTablePropertyError(
                f"{table}: unknown configuration was specified: {key}. Delta table properties are listed in the "
                "Delta documentation; set spark.databricks.delta.allowArbitraryProperties.enabled=true to store "
                "unknown delta.* keys anyway",
                error_class="DELTA_UNKNOWN_CONFIGURATION",
            )
    return result

"""A Delta stream source's options, checked as delta-spark checks them (``DeltaOptions.scala``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...exceptions import DeltaIllegalArgumentException, DeltaUnsupportedOperationException
from ...kernel.streaming import DEFAULT_MAX_FILES, Admission, StreamOptions
from ...kernel.table import parse_timestamp

_BYTE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
}
EVENT_TIME_OPTION = "__sparkdelta_event_time"
"""The internal option naming the watermark's column, which ``withEventTimeOrder`` orders by."""
_FLAGS = (
    "ignoreDeletes",
    "ignoreChanges",
    "skipChangeCommits",
    "readChangeFeed",
    "readChangeData",  # delta-spark's older name for readChangeFeed
    "failOnDataLoss",
    "withEventTimeOrder",
)


def _illegal(name: str, value: Any, explain: str) -> DeltaIllegalArgumentException:
    return DeltaIllegalArgumentException(
        f"Invalid value '{value}' for option '{name}', {explain}", errorClass="DELTA_ILLEGAL_OPTION"
    )


def _flag(name: str, value: Any) -> bool:
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise _illegal(name, value, "must be 'true' or 'false'")
    return text == "true"


def _positive(name: str, value: Any) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number <= 0:
        raise _illegal(name, value, "must be a positive integer")
    return number


def _bytes(name: str, value: Any) -> int:
    """A size as Spark spells one (``1g``, ``512m``, ``1048576``)."""
    found = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(value))
    unit = found.group(2).lower() if found else None
    if found is None or unit not in _BYTE_UNITS or int(found.group(1)) <= 0:
        raise _illegal(name, value, "must be a positive size in bytes (as 1048576, 512m or 1g)")
    return int(found.group(1)) * _BYTE_UNITS[unit]


def stream_options(options: Mapping[str, Any]) -> StreamOptions:
    """The source options among ``options`` (any key case), refusing a value of the wrong kind."""
    given = {k.lower(): v for k, v in options.items() if v is not None}
    for unsupported in ("schemaTrackingLocation", "schemaLocation"):
        if unsupported.lower() in given:
            raise DeltaUnsupportedOperationException(
                f"The source option '{unsupported}' (delta-spark's schema tracking log for non-additive schema changes) "
                "is not supported by sparkdelta: a stream stops at such a change; restart it from a new checkpoint"
            )

    def flag(name: str, default: bool = False) -> bool:
        return _flag(name, given[name.lower()]) if name.lower() in given else default

    for name in _FLAGS:
        flag(name)
    starting_version = given.get("startingversion")
    starting_timestamp = given.get("startingtimestamp")
    if starting_version is not None and starting_timestamp is not None:
        raise DeltaIllegalArgumentException(
            "Please either provide 'startingVersion' or 'startingTimestamp'",
            errorClass="DELTA_STARTING_VERSION_AND_TIMESTAMP_BOTH_SET",
        )
    latest = starting_version is not None and str(starting_version).strip().lower() == "latest"
    version: int | None = None
    if starting_version is not None and not latest:
        try:
            version = int(str(starting_version).strip())
        except ValueError:
            version = -1
        if version < 0:
            raise _illegal("startingVersion", starting_version, "must be greater than or equal to 0, or 'latest'")
    if starting_timestamp is not None:
        try:
            parse_timestamp(str(starting_timestamp))
        except ValueError as error:
            raise _illegal("startingTimestamp", starting_timestamp, f"is not a timestamp ({error})") from error
    max_files = _positive("maxFilesPerTrigger", given["maxfilespertrigger"]) if "maxfilespertrigger" in given else None
    max_bytes = _bytes("maxBytesPerTrigger", given["maxbytespertrigger"]) if "maxbytespertrigger" in given else None
    regex = given.get("excluderegex")
    if regex is not None:
        try:
            re.compile(str(regex))
        except re.error as error:
            raise _illegal("excludeRegex", regex, f"is not a regular expression ({error})") from error
    return StreamOptions(
        starting_version=version,
        starting_latest=latest,
        starting_timestamp=str(starting_timestamp) if starting_timestamp is not None else None,
        admission=Admission(max_files if max_files or max_bytes else DEFAULT_MAX_FILES, max_bytes),
        ignore_deletes=flag("ignoreDeletes"),
        ignore_changes=flag("ignoreChanges"),
        skip_change_commits=flag("skipChangeCommits"),
        exclude_regex=str(regex) if regex is not None else None,
        read_change_feed=flag("readChangeFeed") or flag("readChangeData"),
        fail_on_data_loss=flag("failOnDataLoss", default=True),
        event_time_column=str(given[EVENT_TIME_OPTION]) if flag("withEventTimeOrder") and EVENT_TIME_OPTION in given else None,
    )

"""delta-spark's reader and writer options, parsed once into typed fields (``DeltaOptions.scala``).

Options arrive from ``DataFrameReader`` / ``DataFrameWriter`` (``option``, ``options``,
keyword arguments of ``load`` / ``save``), from SQL (``VERSION AS OF``, ``REPLACE WHERE``,
``LOCATION``) and from ``DeltaTable``. Their keys match case-insensitively, except
``delta.*`` table properties, which keep their spelling (constraint names are case
sensitive). A value of the wrong kind (``versionAsOf=abc``, ``mergeSchema=maybe``) is
refused when the options are parsed, naming the option, before any table is read or
written. Options that are not Delta's (``fs.s3a.*`` storage settings, ``aws_*``...) are
kept as given in ``storage``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from types import MappingProxyType
from typing import Any, Literal

from ..exceptions import DeltaIllegalArgumentException
from ..kernel.table import parse_timestamp

Timestamp = str | datetime | int
PartitionOverwriteMode = Literal["static", "dynamic"]

MERGE_SCHEMA = "mergeSchema"
OVERWRITE_SCHEMA = "overwriteSchema"
REPLACE_WHERE = "replaceWhere"
PARTITION_OVERWRITE_MODE = "partitionOverwriteMode"
DATA_CHANGE = "dataChange"
TXN_APP_ID = "txnAppId"
TXN_VERSION = "txnVersion"
USER_METADATA = "userMetadata"
MAX_RECORDS_PER_FILE = "maxRecordsPerFile"
OPTIMIZE_WRITE = "optimizeWrite"
VERSION_AS_OF = "versionAsOf"
TIMESTAMP_AS_OF = "timestampAsOf"
READ_CHANGE_FEED = "readChangeFeed"
READ_CHANGE_DATA = "readChangeData"  # delta-spark's older name for readChangeFeed, still honoured
STARTING_VERSION = "startingVersion"
ENDING_VERSION = "endingVersion"
STARTING_TIMESTAMP = "startingTimestamp"
ENDING_TIMESTAMP = "endingTimestamp"
PATH = "path"
_NAMES = {
    name.lower(): name
    for name in (
        MERGE_SCHEMA,
        OVERWRITE_SCHEMA,
        REPLACE_WHERE,
        PARTITION_OVERWRITE_MODE,
        DATA_CHANGE,
        TXN_APP_ID,
        TXN_VERSION,
        USER_METADATA,
        MAX_RECORDS_PER_FILE,
        OPTIMIZE_WRITE,
        VERSION_AS_OF,
        TIMESTAMP_AS_OF,
        READ_CHANGE_FEED,
        READ_CHANGE_DATA,
        STARTING_VERSION,
        ENDING_VERSION,
        STARTING_TIMESTAMP,
        ENDING_TIMESTAMP,
        PATH,
    )
}


def _nothing() -> Mapping[str, str]:
    return MappingProxyType({})


def option_key(key: str) -> str:
    """How an option is keyed: lower-cased, except ``delta.*`` table properties (constraint names)."""
    return key if key.lower().startswith("delta.") else key.lower()


def keyed(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` keyed as ``option_key`` keys them; a later spelling of a key wins."""
    return {option_key(k): v for k, v in options.items()}


def illegal_option(name: str, value: Any, explain: str) -> DeltaIllegalArgumentException:
    """delta-spark's ``DELTA_ILLEGAL_OPTION`` error."""
    return DeltaIllegalArgumentException(
        f"Invalid value '{value}' for option '{name}', {explain}", errorClass="DELTA_ILLEGAL_OPTION"
    )


def _boolean(name: str, value: Any) -> bool:
    text = str(value).strip().lower() if isinstance(value, (str, bool)) else None
    if text not in ("true", "false"):
        raise illegal_option(name, value, "must be 'true' or 'false'")
    return text == "true"


def _integer(name: str, value: Any, explain: str, minimum: int | None = None) -> int:
    try:
        number = int(str(value).strip()) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    except ValueError:
        number = None
    if number is None or (minimum is not None and number < minimum):
        raise illegal_option(name, value, explain)
    return number


def _timestamp(name: str, value: Any) -> Timestamp:
    """A timestamp as given (text is resolved in the session time zone when used), checked now."""
    if isinstance(value, datetime) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        try:
            parse_timestamp(value)
        except ValueError:
            raise illegal_option(name, value, "must be a timestamp such as '2024-01-31 12:00:00'") from None
        return value
    raise illegal_option(name, value, "must be a timestamp such as '2024-01-31 12:00:00'")


def _partition_overwrite_mode(value: Any) -> PartitionOverwriteMode:
    mode = str(value).strip().lower()
    if mode == "static":
        return "static"
    if mode == "dynamic":
        return "dynamic"
    raise illegal_option(PARTITION_OVERWRITE_MODE, value, "must be 'STATIC' or 'DYNAMIC'")


@dataclass(frozen=True)
class DeltaOptions:
    """The options of one read or write, typed. ``None`` means not given (a session setting or
    the table decides); ``table_properties`` are the ``delta.*`` options, which a write that
    creates the table makes its properties."""

    merge_schema: bool | None = None
    overwrite_schema: bool = False
    replace_where: str | None = None
    partition_overwrite_mode: PartitionOverwriteMode | None = None
    data_change: bool = True
    txn_app_id: str | None = None
    txn_version: int | None = None
    user_metadata: str | None = None
    max_records_per_file: int | None = None
    optimize_write: bool | None = None
    version_as_of: int | None = None
    timestamp_as_of: Timestamp | None = None
    read_change_feed: bool = False
    starting_version: int | None = None
    ending_version: int | None = None
    starting_timestamp: Timestamp | None = None
    ending_timestamp: Timestamp | None = None
    path: str | None = None
    table_properties: Mapping[str, str] = field(default_factory=_nothing)
    storage: Mapping[str, str] = field(default_factory=_nothing)

    @classmethod
    def parse(cls, options: Mapping[str, Any] | None = None) -> DeltaOptions:
        """Parse reader or writer options (any key case), refusing a value of the wrong kind."""
        given = keyed(options or {})
        known = {_NAMES[k]: v for k, v in given.items() if k in _NAMES and v is not None}
        properties = {k: str(v) for k, v in given.items() if k.startswith("delta.")}
        storage = {k: str(v) for k, v in given.items() if k not in _NAMES and not k.startswith("delta.")}

        def text(name: str) -> str | None:
            return str(known[name]) if name in known else None

        def flag(name: str) -> bool | None:
            return _boolean(name, known[name]) if name in known else None

        def version(name: str, explain: str, minimum: int | None = None) -> int | None:
            return _integer(name, known[name], explain, minimum) if name in known else None

        def instant(name: str) -> Timestamp | None:
            return _timestamp(name, known[name]) if name in known else None

        parsed = cls(
            merge_schema=flag(MERGE_SCHEMA),
            overwrite_schema=bool(flag(OVERWRITE_SCHEMA)),
            replace_where=text(REPLACE_WHERE),
            partition_overwrite_mode=(
                _partition_overwrite_mode(known[PARTITION_OVERWRITE_MODE]) if PARTITION_OVERWRITE_MODE in known else None
            ),
            data_change=flag(DATA_CHANGE) is not False,
            txn_app_id=text(TXN_APP_ID),
            txn_version=version(TXN_VERSION, "must be a non-negative integer", 0),
            user_metadata=text(USER_METADATA),
            max_records_per_file=version(MAX_RECORDS_PER_FILE, "must be an integer"),
            optimize_write=flag(OPTIMIZE_WRITE),
            version_as_of=version(VERSION_AS_OF, "must be a table version (an integer)"),
            timestamp_as_of=instant(TIMESTAMP_AS_OF),
            read_change_feed=bool(flag(READ_CHANGE_FEED)) or bool(flag(READ_CHANGE_DATA)),
            starting_version=version(STARTING_VERSION, "must be a table version (an integer)"),
            ending_version=version(ENDING_VERSION, "must be a table version (an integer)"),
            starting_timestamp=instant(STARTING_TIMESTAMP),
            ending_timestamp=instant(ENDING_TIMESTAMP),
            path=text(PATH),
            table_properties=MappingProxyType(properties),
            storage=MappingProxyType(storage),
        )
        if (parsed.txn_app_id is None) != (parsed.txn_version is None):
            raise DeltaIllegalArgumentException(
                "Invalid options for idempotent Dataframe writes: "
                "Both txnVersion and txnAppId must be specified for idempotent data frame writes",
                errorClass="DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS",
            )
        return parsed

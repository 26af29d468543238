"""Row tracking (PROTOCOL.md, "Row Tracking"): row ids and row commit versions a commit assigns.

Every commit to a table that supports the ``rowTracking`` feature (and has not suspended it)
gives each new file a ``baseRowId`` above the table's high-water mark and its version as
``defaultRowCommitVersion``, and moves the mark in the ``delta.rowTracking`` domain. The
assignment is made per commit attempt, so a commit that loses its version to a concurrent
one takes ids above the winner's mark. Re-committed files (a deletion vector added,
RESTORE, CLONE) keep their ids: their actions carry them.

A row's stable id and commit version are the materialized columns' values where not null,
else the file's defaults plus the row's position. Writers that copy or update rows of a
table with row tracking *enabled* preserve them through those hidden columns (the engine's
``spark/row_tracking.py``), and say so with the ``delta.rowTracking.preserved`` tag.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from .actions import Action, AddFile, DomainMetadata, Metadata, Protocol, RemoveFile
from .errors import InvalidTableOperationError
from .features import is_true
from .protocol import writer_features

if TYPE_CHECKING:
    from .snapshot import Snapshot

FEATURE = "rowTracking"
DOMAIN = "delta.rowTracking"
ENABLE = "delta.enableRowTracking"
SUSPENDED = "delta.rowTrackingSuspended"
ROW_ID_COLUMN = "delta.rowTracking.materializedRowIdColumnName"
COMMIT_VERSION_COLUMN = "delta.rowTracking.materializedRowCommitVersionColumnName"
PRESERVED_TAG = "delta.rowTracking.preserved"
# delta-spark tags the metadata commit that only turns row tracking on after its backfill.
ENABLEMENT_ONLY_TAG = "rowTrackingEnablementOnly"
BACKFILL_OPERATION = "ROW TRACKING BACKFILL"
# No row id assigned yet: the first file's baseRowId is the mark plus one.
NO_ROWS = -1


def is_supported(protocol: Protocol) -> bool:
    return FEATURE in writer_features(protocol)


def is_suspended(metadata: Metadata) -> bool:
    return is_true(metadata.configuration, SUSPENDED)


def assigns_ids(protocol: Protocol, metadata: Metadata) -> bool:
    """Whether commits must give new files row ids: the feature supported and not suspended."""
    return is_supported(protocol) and not is_suspended(metadata)


def is_enabled(protocol: Protocol, metadata: Metadata) -> bool:
    """Whether every row has a stable id, which writers must preserve (``delta.enableRowTracking``)."""
    return is_supported(protocol) and is_true(metadata.configuration, ENABLE)


def materialized_columns(metadata: Metadata) -> tuple[str, str]:
    """The hidden data-file columns of preserved row ids and row commit versions."""
    try:
        return metadata.configuration[ROW_ID_COLUMN], metadata.configuration[COMMIT_VERSION_COLUMN]
    except KeyError as missing:
        raise InvalidTableOperationError(f"row tracking is enabled but the table configuration lacks {missing}") from None


def high_water_mark(domains: dict[str, DomainMetadata]) -> int:
    """The highest row id assigned so far (``NO_ROWS`` before any)."""
    domain = domains.get(DOMAIN)
    return NO_ROWS if domain is None or domain.removed else mark_of(domain.configuration)


def mark_of(configuration: str) -> int:
    value = json.loads(configuration).get("rowIdHighWaterMark")
    if not isinstance(value, int):
        raise InvalidTableOperationError(f"the {DOMAIN} domain holds no integer rowIdHighWaterMark: {configuration}")
    return value


def mark_domain(mark: int) -> DomainMetadata:
    """The domain recording ``mark``, spelled as delta-spark spells it."""
    return DomainMetadata(DOMAIN, json.dumps({"rowIdHighWaterMark": mark, "domainName": DOMAIN}, separators=(",", ":")))


def with_column_names(metadata: Metadata, previous: Metadata | None, protocol: Protocol) -> Metadata:
    """``metadata`` naming the materialized columns where the protocol supports row tracking:
    the previous metadata's names where it has them, new unique ones otherwise (as delta-spark
    names them, so no table column can be called so)."""
    if not is_supported(protocol):
        return metadata
    config = dict(metadata.configuration)
    earlier = previous.configuration if previous is not None else {}
    prefixes = {ROW_ID_COLUMN: "_row-id-col-", COMMIT_VERSION_COLUMN: "_row-commit-version-col-"}
    for key, prefix in prefixes.items():
        if key not in config:
            config[key] = earlier.get(key) or f"{prefix}{uuid.uuid4()}"
    return metadata if config == metadata.configuration else replace(metadata, configuration=config)


def check_enablement(actions: Sequence[Action], snapshot: Snapshot, protocol: Protocol, metadata: Metadata) -> None:
    """Refuse a commit that turns row tracking on while files of ``snapshot`` it keeps have no row ids
    (the spec's rule: a backfill gives them ids first, ``row_tracking_backfill.py``)."""
    if not is_enabled(protocol, metadata) or is_true(snapshot.configuration, ENABLE) or snapshot.metadata.id != metadata.id:
        return
    files = snapshot.active_files(["path", "baseRowId"])
    without = {str(p) for p in files.filter(pc.is_null(files.column("baseRowId"))).column("path").to_pylist()}
    without -= {a.path for a in actions if isinstance(a, (AddFile, RemoveFile))}
    if without:
        raise InvalidTableOperationError(
            f"{snapshot.table_root} (version {snapshot.version}): cannot set {ENABLE}: {len(without)} file(s) have no row "
            f"ids yet (e.g. {min(without)}); ALTER TABLE ... SET TBLPROPERTIES ('{ENABLE}' = 'true') gives them ids first"
        )


def _num_records(add: AddFile, table: str) -> int:
    stats: dict[str, Any] = json.loads(add.stats) if add.stats else {}
    count = stats.get("numRecords")
    if not isinstance(count, int):
        raise InvalidTableOperationError(
            f"{table}: cannot assign row ids to {add.path}: its stats lack numRecords, which row tracking needs"
        )
    return count


def assign(actions: Sequence[Action], mark: int, version: int, table: str) -> list[Action]:
    """``actions`` with row ids and commit versions for the adds that lack them, and the new
    high-water mark's domain when it moves.

    Adds are given ids in their order in the commit. An add that already has a
    ``baseRowId`` (a re-committed or cloned file) keeps it, and the mark rises past its rows
    if it was below them, so no later commit reuses them.
    """
    result: list[Action] = []
    start = mark
    for action in actions:
        if isinstance(action, AddFile):
            if action.base_row_id is None:
                count = _num_records(action, table)
                action = replace(action, base_row_id=mark + 1)
                mark += count
            elif action.stats:
                mark = max(mark, action.base_row_id + _num_records(action, table) - 1)
            if action.default_row_commit_version is None:
                action = replace(action, default_row_commit_version=version)
        if not (isinstance(action, DomainMetadata) and action.domain == DOMAIN):
            result.append(action)
    if mark != start:
        result.append(mark_domain(mark))
    return result


def winner_mark(domains: Sequence[dict[str, Any]]) -> int | None:
    """The high-water mark a concurrent commit set, if it set one."""
    for domain in domains:
        if domain.get("domain") == DOMAIN and not domain.get("removed"):
            return mark_of(str(domain.get("configuration") or "{}"))
    return None

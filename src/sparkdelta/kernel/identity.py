"""Identity columns: their definition in field metadata, and the high-water mark rules.

An identity column (PROTOCOL.md, "Identity Columns") is a ``long`` column whose metadata
holds ``delta.identity.start``, ``delta.identity.step`` and
``delta.identity.allowExplicitInsert`` (false for ``GENERATED ALWAYS``, true for ``BY
DEFAULT``). Writers generate ``start + k * step`` for rows that give no value, each
beyond ``delta.identity.highWaterMark``, and move the mark in the same commit.

The mark only ever moves in the direction of the step, and only to a value the column
could have generated: a candidate is rounded up to the next ``start + k * step``, and a
candidate before ``start`` is ignored (a user's value below a positive start must not
make the next generated value skip ``start``). These are delta-spark's rules
(``IdentityColumn.updateToValidHighWaterMark``), so both writers agree on what the next
value is. Only the engine writes data; what is here needs none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .actions import Action, Metadata
from .column_mapping import PHYSICAL_NAME
from .errors import InvalidTableOperationError

START = "delta.identity.start"
STEP = "delta.identity.step"
HIGH_WATER_MARK = "delta.identity.highWaterMark"
ALLOW_EXPLICIT_INSERT = "delta.identity.allowExplicitInsert"
KEYS = (START, STEP, HIGH_WATER_MARK, ALLOW_EXPLICIT_INSERT)
# commitInfo tag of a commit whose metadata change only moves high-water marks: a concurrent
# transaction that changes no metadata need not conflict with it (delta-spark's ConflictChecker).
SCHEMA_UPDATE_TAG = "delta.identity.schemaUpdate"

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class IdentityInfo:
    """One identity column: its name, definition, and the mark (None before any value was generated)."""

    name: str
    start: int
    step: int
    high_water_mark: int | None
    allow_explicit_insert: bool

    @property
    def generated_always(self) -> bool:
        return not self.allow_explicit_insert

    @property
    def next_value(self) -> int:
        """The first value the next write generates: one step past the mark, else ``start``."""
        return self.start if self.high_water_mark is None else self.high_water_mark + self.step


def is_identity(metadata: Mapping[str, Any], name: str = "") -> bool:
    """Whether a field with this metadata is an identity column; half a definition is refused,
    as delta-spark refuses it (``DELTA_IDENTITY_COLUMN_INCONSISTENT_METADATA``)."""
    present = [key in metadata for key in (START, STEP, ALLOW_EXPLICIT_INSERT)]
    if any(present) and not all(present):
        has_start, has_step, has_insert = (str(p).lower() for p in present)
        raise InvalidTableOperationError(
            f"Inconsistent IDENTITY metadata for column {name} detected: {has_start}, {has_step}, {has_insert}",
            error_class="DELTA_IDENTITY_COLUMN_INCONSISTENT_METADATA",
        )
    return all(present)


def identity_info(name: str, metadata: Mapping[str, Any]) -> IdentityInfo:
    """The identity definition in a field's metadata (``is_identity`` must hold)."""
    mark = metadata.get(HIGH_WATER_MARK)
    return IdentityInfo(
        name,
        int(metadata[START]),
        int(metadata[STEP]),
        None if mark is None else int(mark),
        _boolean(metadata[ALLOW_EXPLICIT_INSERT]),
    )


def _boolean(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() == "true"


def identity_columns(metadata: Metadata) -> list[IdentityInfo]:
    """The table's identity columns (top-level only: the spec allows no others), in schema order."""
    fields = json.loads(metadata.schema_string or '{"fields": []}').get("fields", [])
    return [identity_info(f["name"], f.get("metadata") or {}) for f in fields if is_identity(f.get("metadata") or {}, f["name"])]


def round_to_next(start: int, step: int, value: int) -> int:
    """``value`` rounded to the next ``start + k * step`` in the direction of ``step``
    (``value`` itself when it is one); delta-spark's ``roundToNext``, overflow refused."""
    offset = value - start
    if offset % step == 0:
        return value
    quotient = abs(offset) // abs(step) * (1 if (offset > 0) == (step > 0) else -1)  # truncated, as the JVM divides
    multiple = quotient + 1 if (offset > 0) == (step > 0) else quotient
    return _exact(start + step * multiple)


def _exact(value: int) -> int:
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise ArithmeticError("long overflow")
    return value


def valid_high_water_mark(info: IdentityInfo, candidate: int, allow_lowering: bool = False) -> int | None:
    """The mark after values up to ``candidate`` (in the step's direction) were written, or
    None when it stays: a candidate before ``start`` is ignored, others are rounded to a value
    the column generates and never move the mark back (unless ``allow_lowering``, for SYNC
    IDENTITY). A mark already before ``start`` (a bad one) is always replaced."""
    positive = info.step > 0

    def before(a: int, b: int) -> bool:
        return a < b if positive else a > b

    rounded = round_to_next(info.start, info.step, candidate)
    mark = rounded
    if info.high_water_mark is not None and not allow_lowering and before(rounded, info.high_water_mark):
        mark = info.high_water_mark
    bad = info.high_water_mark is not None and before(info.high_water_mark, info.start)
    changed = info.high_water_mark != mark
    if bad or (not before(candidate, info.start) and changed):
        return mark
    return None


def with_high_water_marks(metadata: Metadata, candidates: Mapping[str, int], allow_lowering: bool = False) -> Metadata:
    """``metadata`` with each identity column's mark moved for the written values'
    ``candidates`` (their max for a positive step, min for a negative one, by column name);
    ``metadata`` itself when no mark moves."""
    schema = json.loads(metadata.schema_string or '{"fields": []}')
    by_name = {name.lower(): value for name, value in candidates.items()}
    changed = False
    for field in schema.get("fields", []):
        field_metadata = field.get("metadata") or {}
        candidate = by_name.get(field["name"].lower())
        if candidate is None or not is_identity(field_metadata, field["name"]):
            continue
        mark = valid_high_water_mark(identity_info(field["name"], field_metadata), candidate, allow_lowering)
        if mark is not None:
            field["metadata"] = {**field_metadata, HIGH_WATER_MARK: mark}
            changed = True
    if not changed:
        return metadata
    return replace(metadata, schema_string=json.dumps(schema, separators=(",", ":")))


def with_merged_high_water_marks(metadata: Metadata, other: Metadata) -> Metadata:
    """``metadata`` keeping ``other``'s marks where they are further along: a RESTORE or a
    CLONE replacing a table must not let the next write generate values it generated already.
    Columns are matched by physical name (a renamed column is the same column)."""
    theirs = {_physical(f): f.get("metadata", {}).get(HIGH_WATER_MARK) for f in _fields(other)}
    marks = {
        f["name"]: theirs[_physical(f)]
        for f in _fields(metadata)
        if theirs.get(_physical(f)) is not None and is_identity(f.get("metadata") or {}, f["name"])
    }
    return with_high_water_marks(metadata, marks)


def _fields(metadata: Metadata) -> list[dict[str, Any]]:
    fields: list[dict[str, Any]] = json.loads(metadata.schema_string or '{"fields": []}').get("fields", [])
    return fields


def _physical(field: Mapping[str, Any]) -> str:
    return str((field.get("metadata") or {}).get(PHYSICAL_NAME, field["name"]))


def with_written_values(metadata: Metadata, bounds: Mapping[str, tuple[int, int]]) -> Metadata:
    """``metadata`` with the marks moved for written values whose (min, max) per identity column
    are ``bounds``: the max counts for a positive step, the min for a negative one."""
    steps = {c.name.lower(): c.step for c in identity_columns(metadata)}
    candidates = {name: high if steps[name.lower()] > 0 else low for name, (low, high) in bounds.items() if name.lower() in steps}
    return with_high_water_marks(metadata, candidates)


def marks_committed(
    actions: Sequence[Action], metadata: Metadata, bounds: Mapping[str, tuple[int, int]]
) -> tuple[list[Action], dict[str, str] | None]:
    """A write's actions with the marks its values move (``with_written_values`` of ``metadata``,
    the metadata it wrote with), and the commitInfo tags to commit them under.

    The moved marks replace the metadata action the commit has, or are one of their own,
    then tagged as a change of marks only (``SCHEMA_UPDATE_TAG``).
    """
    updated = with_written_values(metadata, bounds)
    if updated is metadata:
        return list(actions), None
    if any(isinstance(a, Metadata) for a in actions):
        return [updated if isinstance(a, Metadata) else a for a in actions], None
    return [*actions, updated], {SCHEMA_UPDATE_TAG: "true"}

"""Table constraints checked on every write: NOT NULL columns, column invariants,
``delta.constraints.*`` CHECK constraints and generated columns.

The checks run inside the write job itself (a row that fails raises from the executor),
so enforcing them costs no extra pass over the data. A failure names the constraint and
shows the offending row; nothing is committed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from ...exceptions import DeltaInvariantViolationException
from ..projection import quote

_MARKER = "SPARKDELTA_CONSTRAINT_VIOLATION"
# Separates the parts of the error text; unlike "|", it cannot occur in a SQL expression.
_SEPARATOR = "\x1f"
CONSTRAINT_PREFIX = "delta.constraints."
INVARIANTS_KEY = "delta.invariants"
# delta-spark's error class per kind of constraint (it checks generated columns as CHECK constraints).
_ERROR_CLASS = {
    "NOT NULL": "DELTA_NOT_NULL_CONSTRAINT_VIOLATED",
    "CHECK": "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES",
    "GENERATED": "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES",
    "replaceWhere": "DELTA_REPLACE_WHERE_MISMATCH",
}


@dataclass(frozen=True)
class Constraint:
    name: str
    expression: str
    kind: str  # "NOT NULL", "INVARIANT", "CHECK", "GENERATED" or "replaceWhere"
    condition: str | None = None  # the SQL checked per row, when it is not ``expression`` itself

    @property
    def check(self) -> str:
        return self.condition or self.expression


def _quoted(parts: list[str]) -> str:
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def _parent_null_guard(path: list[str]) -> str:
    """A nested column's constraint holds when a parent struct is null."""
    return " OR ".join(f"{_quoted(path[:i])} IS NULL" for i in range(1, len(path)))


def _invariant(expression_json: str) -> str | None:
    try:
        parsed = json.loads(expression_json)
        return str(parsed["expression"]["expression"])
    except (ValueError, KeyError, TypeError):
        return None


def _field_constraints(schema: StructType, parents: list[str]) -> list[Constraint]:
    result = []
    for field in schema.fields:
        path = [*parents, field.name]
        guard = _parent_null_guard(path)
        if not field.nullable:
            check = f"{_quoted(path)} IS NOT NULL"
            result.append(Constraint(".".join(path), check, "NOT NULL", f"{guard} OR {check}" if guard else None))
        invariant = _invariant(field.metadata[INVARIANTS_KEY]) if INVARIANTS_KEY in field.metadata else None
        if invariant is not None:
            condition = f"COALESCE(({invariant}), false)"
            result.append(Constraint(".".join(path), invariant, "INVARIANT", f"{guard} OR {condition}" if guard else condition))
        if isinstance(field.dataType, StructType):
            result.extend(_field_constraints(field.dataType, path))
    return result


def table_constraints(schema: StructType, configuration: dict[str, str]) -> list[Constraint]:
    """Every constraint a write into this table must satisfy (generated columns aside)."""
    checks = [
        Constraint(key[len(CONSTRAINT_PREFIX) :], value, "CHECK")
        for key, value in sorted(configuration.items())
        if key.lower().startswith(CONSTRAINT_PREFIX)
    ]
    return _field_constraints(schema, []) + checks


def enforce(df: DataFrame, constraints: list[Constraint]) -> DataFrame:
    """``df`` with each constraint asserted per row (raising in the job on violation)."""
    if not constraints:
        return df
    row_json = F.expr(f"to_json(struct({', '.join(quote(c) for c in df.columns)}))")  # one call, not one per column
    condition: Column = F.lit(True)
    for constraint in constraints:
        header = _SEPARATOR.join((_MARKER, constraint.kind, constraint.name, constraint.expression, ""))
        message = F.concat(F.lit(header), row_json)
        check = F.when(F.expr(constraint.check), F.lit(True)).otherwise(F.raise_error(message))
        condition = condition & check
    return df.where(condition)


def _describe(kind: str, name: str, expression: str) -> str:
    if kind == "NOT NULL":
        return f"NOT NULL constraint violated for column: {name}"
    if kind == "INVARIANT":
        return f"invariant ({expression}) violated for column: {name}"
    if kind == "replaceWhere":
        return f"written data does not match replaceWhere '{expression}'"
    if kind == "GENERATED":
        return f"generated column {name} does not match its generation expression ({expression})"
    return f"CHECK constraint {name} ({expression}) violated"


def violation(error: BaseException, table: str) -> DeltaInvariantViolationException | None:
    """The constraint error inside a failed Spark job, if that is why it failed."""
    text = str(error)
    start = text.find(_MARKER + _SEPARATOR)
    if start < 0:
        return None
    body = text[start + len(_MARKER) + 1 :]
    kind, name, expression, rest = (body.split(_SEPARATOR, 3) + ["", "", "", ""])[:4]
    row = rest.split("\n", 1)[0].split(" SQLSTATE", 1)[0].rstrip("'\". ")
    what = _describe(kind, name, expression)
    return DeltaInvariantViolationException(
        f"{table}: {what}, by row with values {row}. Nothing was committed.", errorClass=_ERROR_CLASS.get(kind)
    )

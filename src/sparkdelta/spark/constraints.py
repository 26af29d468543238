"""Table constraints checked on every write: NOT NULL columns and ``delta.constraints.*``.

The checks run inside the write job itself (a row that fails raises from the executor),
so enforcing them costs no extra pass over the data. A failure names the constraint and
shows the offending row; nothing is committed.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from ..kernel.errors import DeltaError

_MARKER = "SPARKDELTA_CONSTRAINT_VIOLATION"
CONSTRAINT_PREFIX = "delta.constraints."


class DeltaInvariantViolationException(DeltaError):
    """A row broke a NOT NULL or CHECK constraint (delta-spark's name)."""


@dataclass(frozen=True)
class Constraint:
    name: str
    expression: str
    kind: str  # "NOT NULL", "CHECK" or "replaceWhere"


def _quoted(parts: list[str]) -> str:
    return ".".join(f"`{p}`" for p in parts)


def _not_null(schema: StructType, parents: list[str]) -> list[Constraint]:
    result = []
    for field in schema.fields:
        path = [*parents, field.name]
        if not field.nullable:
            guard = " OR ".join(f"{_quoted(path[:i])} IS NULL" for i in range(1, len(path)))
            check = f"{_quoted(path)} IS NOT NULL"
            result.append(Constraint(".".join(path), f"{guard} OR {check}" if guard else check, "NOT NULL"))
        if isinstance(field.dataType, StructType):
            result.extend(_not_null(field.dataType, path))
    return result


def table_constraints(schema: StructType, configuration: dict[str, str]) -> list[Constraint]:
    """Every constraint a write into this table must satisfy."""
    checks = [
        Constraint(key[len(CONSTRAINT_PREFIX):], value, "CHECK")
        for key, value in sorted(configuration.items())
        if key.lower().startswith(CONSTRAINT_PREFIX)
    ]
    return _not_null(schema, []) + checks


def enforce(df: DataFrame, constraints: list[Constraint]) -> DataFrame:
    """``df`` with each constraint asserted per row (raising in the job on violation)."""
    if not constraints:
        return df
    row_json = F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns]))
    condition: Column = F.lit(True)
    for constraint in constraints:
        message = F.concat(F.lit(f"{_MARKER}|{constraint.kind}|{constraint.name}|{constraint.expression}|"), row_json)
        check = F.when(F.expr(constraint.expression), F.lit(True)).otherwise(F.raise_error(message))
        condition = condition & check
    return df.where(condition)


def violation(error: BaseException, table: str) -> DeltaInvariantViolationException | None:
    """The constraint error inside a failed Spark job, if that is why it failed."""
    text = str(error)
    start = text.find(_MARKER + "|")
    if start < 0:
        return None
    body = text[start + len(_MARKER) + 1:]
    kind, name, expression, rest = (body.split("|", 3) + ["", "", "", ""])[:4]
    row = rest.split("\n", 1)[0].split(" SQLSTATE", 1)[0].rstrip("'\". ")
    if kind == "NOT NULL":
        what = f"NOT NULL constraint violated for column: {name}"
    elif kind == "replaceWhere":
        what = f"written data does not match replaceWhere '{expression}'"
    else:
        what = f"CHECK constraint {name} ({expression}) violated"
    return DeltaInvariantViolationException(f"{table}: {what}, by row with values {row}. Nothing was committed.")

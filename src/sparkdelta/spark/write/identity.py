"""Identity columns in Spark writes: which values a write may give, and generating the others.

A row that gives no value for an identity column gets one generated, the way
delta-spark's ``GenerateIdentityValues`` does it: no single-partition window, every
partition numbers its own rows. Partition ``p`` of ``n`` gives its ``r``-th generated row
``next + step * (p + r * n)``, where ``next`` is the column's next value
(``kernel/identity.py``): unique across partitions, each value ``start + k * step`` and
beyond the high-water mark.

That needs ``n``, the partition count of the stage that numbers the rows, which adaptive
execution fixes only at run time (it coalesces shuffle partitions). So the rows are first
computed and kept (``checkpoint.checkpointed``: ``localCheckpoint``, which completes the
observations in their query, as MERGE's row counts), and numbered on top of the kept
partitions, which every read of them sees alike: a row's value is the same wherever the
write reads it. ``n`` is the number of kept partitions up to the last one holding a row,
observed by the job that keeps them (the values are then those of delta-spark, unless
trailing partitions are empty: still unique, each ``start + k * step``).

The write then learns the new high-water mark from the written files' footers
(``identity_bounds``: their max, or min for a negative step), as delta-spark collects it
from the write job's rows, and commits it with the files (``kernel.identity.marks_committed``).

``GENERATED ALWAYS`` columns refuse given values, UPDATE and MERGE's update clauses refuse
to set any identity column, with delta-spark's error classes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from ...exceptions import (
    DeltaAnalysisException,
    DeltaArithmeticException,
    DeltaRuntimeException,
    DeltaUnsupportedOperationException,
)
from ...kernel.features import GENERATION_EXPRESSION
from ...kernel.identity import ALLOW_EXPLICIT_INSERT, START, STEP, IdentityInfo, identity_info, is_identity
from .checkpoint import checkpointed

_OVERFLOW_MARKER = "SPARKDELTA_IDENTITY_OVERFLOW"
_ROW_BITS = 33  # monotonically_increasing_id(): the partition index above bit 33, the row below
_TEMPORARY = "__sparkdelta_identity_{}"
_PARTITION = "__sparkdelta_identity_partition"
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def identity_metadata(start: int, step: int, allow_explicit_insert: bool) -> dict[str, Any]:
    """A new identity column's field metadata (no high-water mark: nothing generated yet)."""
    return {START: start, STEP: step, ALLOW_EXPLICIT_INSERT: allow_explicit_insert}


def identity_columns(schema: StructType) -> list[IdentityInfo]:
    """The identity columns of ``schema`` (a table's Spark schema with its field metadata)."""
    return [identity_info(f.name, f.metadata) for f in schema.fields if is_identity(f.metadata, f.name)]


def check_identity_columns(schema: StructType, partition_columns: Iterable[str], where: str) -> None:
    """Refuse identity columns a table cannot have, as delta-spark's CREATE TABLE does: a type
    other than BIGINT, a step of 0, a generation expression too, being a partition column, or
    nested in a struct."""
    for field in schema.fields:
        if not is_identity(field.metadata, field.name):
            _refuse_nested(field, where)
            continue
        check_identity_definition(field)
    partitioned = {c.lower() for c in partition_columns}
    for info in identity_columns(schema):
        if info.name.lower() in partitioned:
            raise DeltaAnalysisException(
                f"PARTITIONED BY IDENTITY column {info.name} is not supported.",
                errorClass="DELTA_IDENTITY_COLUMNS_PARTITION_NOT_SUPPORTED",
            )


def check_identity_definition(field: StructField) -> None:
    """One identity column's definition, as delta-spark's column builder checks it."""
    if GENERATION_EXPRESSION in field.metadata:
        raise DeltaAnalysisException(
            "IDENTITY column cannot be specified with a generated column expression.",
            errorClass="DELTA_IDENTITY_COLUMNS_WITH_GENERATED_EXPRESSION",
        )
    if not isinstance(field.dataType, LongType):
        raise DeltaUnsupportedOperationException(
            f"DataType {field.dataType.simpleString()} is not supported for IDENTITY columns.",
            errorClass="DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE",
        )
    if int(field.metadata[STEP]) == 0:
        raise DeltaAnalysisException("IDENTITY column step cannot be 0.", errorClass="DELTA_IDENTITY_COLUMNS_ILLEGAL_STEP")


def _refuse_nested(field: StructField, where: str) -> None:
    data_type = field.dataType
    if isinstance(data_type, StructType):
        for inner in data_type.fields:
            if is_identity(inner.metadata, inner.name):
                raise DeltaAnalysisException(f"{where}: {field.name}.{inner.name}: an identity column cannot be nested")
            _refuse_nested(inner, where)


def refuse_explicit_insert(schema: StructType, given: Iterable[str]) -> None:
    """Refuse values given for a ``GENERATED ALWAYS`` identity column (names ignoring case)."""
    names = {name.lower() for name in given}
    for info in identity_columns(schema):
        if info.generated_always and info.name.lower() in names:
            raise DeltaAnalysisException(
                f"Providing values for GENERATED ALWAYS AS IDENTITY column {info.name} is not supported.",
                errorClass="DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED",
            )


def refuse_update(schema: StructType, assigned: Iterable[str]) -> None:
    """Refuse an UPDATE (or MERGE update clause) that sets an identity column, of either kind."""
    names = {name.lower() for name in assigned}
    for info in identity_columns(schema):
        if info.name.lower() in names:
            raise DeltaAnalysisException(
                f"UPDATE on IDENTITY column {info.name} is not supported.",
                errorClass="DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED",
            )


def missing_identity_columns(schema: StructType, given: Iterable[str]) -> list[str]:
    """The identity columns a write's data lacks: their values are generated."""
    names = {name.lower() for name in given}
    return [info.name for info in identity_columns(schema) if info.name.lower() not in names]


def with_identity_values(df: DataFrame, schema: StructType, generate: Mapping[str, Column | None]) -> DataFrame:
    """``df`` with each identity column in ``generate`` (a column of ``schema``) given generated
    values where its condition holds (None: in every row; added when ``df`` lacks it).

    The conditions are evaluated on ``df``'s columns. ``df`` itself when there is nothing
    to generate; else ``df``'s rows computed once (``checkpointed``), numbered.
    """
    if not generate:
        return df
    infos = {info.name.lower(): info for info in identity_columns(schema)}
    for name in generate:
        if not _LONG_MIN <= infos[name.lower()].next_value <= _LONG_MAX:
            raise DeltaArithmeticException(
                f"long overflow: identity column {name} has generated its last value (its high-water mark is "
                f"{infos[name.lower()].high_water_mark})"
            )
    rows, partitions = _kept(df)
    numbered: dict[str, Column] = {}
    for i, condition in enumerate(generate.values()):
        row_id = F.monotonically_increasing_id()  # one counter per column, as delta-spark has one generator each
        numbered[_TEMPORARY.format(i)] = row_id if condition is None else F.when(condition, row_id)
    rows = rows.withColumns(numbered)
    given = {c.lower() for c in df.columns}
    values = {
        infos[name.lower()].name: _generated(infos[name.lower()], F.col(_TEMPORARY.format(i)), partitions, name, given)
        for i, name in enumerate(generate)
    }
    return rows.withColumns(values).drop(*numbered)


def _kept(df: DataFrame) -> tuple[DataFrame, int]:
    """``df`` computed once and kept, and its kept partitions up to the last that holds a
    row, which the job keeping them observes (each row's partition index is below that
    count, so ``p + r * n`` numbers them all apart; no row: any count does)."""
    last = Observation()
    partition = F.col(_PARTITION)
    observed = df.withColumn(_PARTITION, F.spark_partition_id()).observe(last, F.max(partition).alias("p")).drop(partition)
    kept = checkpointed(observed)
    found = last.get.get("p")
    return kept, 1 if found is None else int(found) + 1


def _generated(info: IdentityInfo, row_id: Column, partitions: int, name: str, given: set[str]) -> Column:
    """The identity value of the row ``row_id`` numbers (null: keep the row's value), overflow refused."""
    partition = F.shiftright(row_id, _ROW_BITS)
    row = row_id.bitwiseAND(F.lit((1 << _ROW_BITS) - 1))
    position = F.try_add(partition, F.try_multiply(row, F.lit(partitions)))
    value = F.try_add(F.lit(info.next_value), F.try_multiply(F.lit(info.step), position))
    message = f"{_OVERFLOW_MARKER}\x1f{info.name}"
    generated = F.when(value.isNull(), F.raise_error(F.lit(message)).cast("long")).otherwise(value)
    kept = F.col(f"`{name}`") if name.lower() in given else F.lit(None).cast("long")
    return F.when(row_id.isNull(), kept).otherwise(generated)


def identity_bounds(
    per_file: list[dict[str, tuple[Any, Any] | None]], tracked: Mapping[str, str], root: str
) -> dict[str, tuple[int, int]]:
    """The tracked identity columns' (min, max) over the written files, by logical name, from
    each file's ``stats.column_bounds`` (keyed by physical name; ``tracked`` maps those to
    logical names). A file with values but no statistics for one fails the write: its mark
    could not be known."""
    result: dict[str, tuple[int, int]] = {}
    for bounds in per_file:
        for physical, found in bounds.items():
            logical = tracked[physical]
            if found is None:  # Spark's Parquet writer always writes statistics for BIGINT columns
                raise DeltaRuntimeException(
                    f"{root}: a written file has no statistics for identity column {logical}, so its high-water "
                    "mark cannot be known. Nothing was committed."
                )
            low, high = result.get(logical, (int(found[0]), int(found[1])))
            result[logical] = (min(low, int(found[0])), max(high, int(found[1])))
    return result


def identity_overflow(error: BaseException, table: str) -> DeltaArithmeticException | None:
    """The overflow of an identity column inside a failed write job, if that is why it failed."""
    text = str(error)
    start = text.find(_OVERFLOW_MARKER + "\x1f")
    if start < 0:
        return None
    name = text[start + len(_OVERFLOW_MARKER) + 1 :].split("\n", 1)[0].split(" SQLSTATE", 1)[0].rstrip("'\". ")
    return DeltaArithmeticException(
        f"{table}: long overflow: the values generated for identity column {name} leave the range of BIGINT. "
        "Nothing was committed."
    )

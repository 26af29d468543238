"""The column keys of UPDATE's ``set`` and MERGE's ``set`` / ``values``, resolved as delta-spark does.

delta-spark makes each key an ``UnresolvedAttribute.quotedString(key)``: a column name,
not SQL, so any character may appear in it (``my col``, ``x-y,z``, ``c=1``) except that
an unquoted dot separates nested fields and backquotes quote a whole part: ``a.b`` is
field ``b`` of the struct ``a``, ```a.b``` the column named ``a.b``, and a doubled
backquote inside quotes stands for one. The parts then resolve against the target,
ignoring case: the target's alias may qualify the column, and the parts after the column
are struct fields, whose assigned values are folded into the column's old struct.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from ....exceptions import DeltaAnalysisException
from ...identifiers import attribute_parts
from ...write.schema import bare


@dataclass(frozen=True)
class Assignment:
    """One key resolved: the top-level column it assigns, or assigns into, and the value."""

    key: str
    column: StructField  # the table's field (its spelling of the name)
    path: tuple[str, ...]  # the struct fields below ``column`` the key names; () for the whole column
    value: Column


def resolve_assignments(
    assigned: Sequence[tuple[str, Column]], schema: StructType, alias: str | None, where: str
) -> list[Assignment]:
    """Each key's column and nested path in ``schema``; unknown columns and conflicting keys fail.

    ``where`` names the table and the clause in error messages. Two keys conflict when
    they name the same field or one names a struct the other assigns into, as in delta-spark.
    """
    columns = {f.name.lower(): f for f in schema.fields}
    resolved: list[Assignment] = []
    for key, value in assigned:
        try:
            parts = attribute_parts(key)
        except DeltaAnalysisException as error:
            raise DeltaAnalysisException(f"{error} (a key of {where})") from None
        if alias is not None and len(parts) > 1 and parts[0].lower() == alias.lower() and parts[1].lower() in columns:
            parts = parts[1:]  # qualified by the target's alias, as Spark tries first
        column = columns.get(parts[0].lower())
        if column is None:
            names = ", ".join(f"`{f.name}`" for f in schema.fields)
            raise DeltaAnalysisException(
                f"Cannot resolve {key} in {where} given the table's columns {names}"
                + (" (a dot separates nested fields: quote a name with dots in backticks)" if len(parts) > 1 else "")
            )
        _check_fields(column, parts[1:], key, where)
        resolved.append(Assignment(key, column, tuple(parts[1:]), value))
    lowered = [(a.column.name.lower(), *(p.lower() for p in a.path)) for a in resolved]
    for i, one in enumerate(lowered):
        for j, other in enumerate(lowered[:i]):
            if one[: len(other)] == other or other[: len(one)] == one:
                raise DeltaAnalysisException(
                    f"There is a conflict from these SET columns: [{resolved[j].key}, {resolved[i].key}] in {where}",
                    errorClass="DELTA_CONFLICT_SET_COLUMN",
                )
    return resolved


def _check_fields(column: StructField, path: list[str], key: str, where: str) -> None:
    """Each part of ``path`` names a field of the struct before it (ignoring case)."""
    current = column
    for name in path:
        inner = current.dataType
        if not isinstance(inner, StructType):
            raise DeltaAnalysisException(f"Cannot assign {key} in {where}: {current.name} is not a struct")
        found = next((f for f in inner.fields if f.name.lower() == name.lower()), None)
        if found is None:
            raise DeltaAnalysisException(f"Cannot assign {key} in {where}: no such struct field {name} in {current.name}")
        current = found


def struct_update(old: Column, target_field: StructField, assigned: list[tuple[tuple[str, ...], Column, DataType]]) -> Column:
    """The struct ``old`` with the assigned nested fields (path, value, value's type) replaced, the rest kept."""
    struct_type = target_field.dataType
    if not isinstance(struct_type, StructType):
        raise DeltaAnalysisException(f"{target_field.name} is not a struct: its fields cannot be assigned")
    by_name = {f.name.lower(): f for f in struct_type.fields}
    unknown = [p[0] for p, _, _ in assigned if p[0].lower() not in by_name]
    if unknown:
        raise DeltaAnalysisException(f"No such struct field {unknown[0]} in {target_field.name}")
    fields = []
    for inner in struct_type.fields:
        mine = [(p[1:], v, t) for p, v, t in assigned if p[0].lower() == inner.name.lower()]
        current = old.getField(inner.name)
        whole = [(v, t) for p, v, t in mine if not p]
        if whole:
            value = conform(whole[0][0], whole[0][1], inner.dataType, inner.name, False)
        elif mine:
            value = struct_update(current, inner, mine)
        else:
            value = current
        fields.append(value.alias(inner.name))
    return F.struct(*fields)


def conform(value: Column, given: DataType, wanted: DataType, name: str, evolve: bool) -> Column:
    """``value`` (of type ``given``) as ``wanted``: struct fields matched by name at any depth, then cast.

    A struct field ``wanted`` has and ``given`` lacks is null when the schema evolves (the
    field was added for other rows), an error otherwise; one ``given`` has and ``wanted``
    lacks is an error (the schema would have to evolve).
    """
    if bare(given) == bare(wanted):
        return value  # a cast could only tighten nullability, which Spark refuses
    if isinstance(given, StructType) and isinstance(wanted, StructType):
        by_name = {f.name.lower(): f for f in given.fields}
        extra = sorted(set(by_name) - {f.name.lower() for f in wanted.fields})
        if extra:
            raise DeltaAnalysisException(
                f"Cannot write struct field {name}.{by_name[extra[0]].name}: the table has no such field "
                "(enable schema evolution to add it)"
            )
        fields = []
        for inner in wanted.fields:
            source_field = by_name.get(inner.name.lower())
            if source_field is None and not evolve:
                raise DeltaAnalysisException(
                    f"Cannot write struct {name}: the value lacks field {inner.name} (enable schema evolution to leave it null)"
                )
            inner_value = (
                F.lit(None).cast(inner.dataType)
                if source_field is None
                else conform(
                    value.getField(source_field.name), source_field.dataType, inner.dataType, f"{name}.{inner.name}", evolve
                )
            )
            fields.append(inner_value.alias(inner.name))
        return F.when(value.isNull(), F.lit(None).cast(wanted)).otherwise(F.struct(*fields))
    if isinstance(given, ArrayType) and isinstance(wanted, ArrayType):
        element: Callable[[Column], Column] = lambda x: conform(x, given.elementType, wanted.elementType, name, evolve)  # noqa: E731
        return F.transform(value, element)
    if isinstance(given, MapType) and isinstance(wanted, MapType):
        return F.transform_values(
            value.cast(MapType(wanted.keyType, given.valueType, given.valueContainsNull)),
            lambda _, v: conform(v, given.valueType, wanted.valueType, name, evolve),
        )
    return value.cast(wanted)

"""``ALTER TABLE`` statements on Delta tables, parsed with sqlglot and run by ``alter``.

A statement is taken when its table is ``delta.`/path``` or a name the catalog knows as a
Delta table; every other ALTER goes to Spark. ``UNSET TBLPROPERTIES``, ``CLUSTER BY
NONE``, ``DROP FEATURE`` and ``ALTER COLUMN ... SYNC IDENTITY``, which sqlglot does not
parse, are recognized by a pattern.
"""

from __future__ import annotations

import re

from pyspark.sql import SparkSession
from pyspark.sql.types import StructField, _parse_datatype_string
from sqlglot import exp

from ...exceptions import DeltaAnalysisException
from ...kernel import Table
from ..catalog import is_delta_table_name, lookup
from ..commands import alter
from ..commands.dml.assignments import attribute_parts
from ..commands.drop_feature import drop_table_feature
from ..commands.sync_identity import sync_identity
from ..paths import normalize_location
from ..storage import open_table
from .dialect import DeltaSpark

_CLUSTER_BY_NONE = re.compile(r"^\s*ALTER\s+TABLE\s+(?P<table>.+?)\s+CLUSTER\s+BY\s+NONE\s*;?\s*$", re.IGNORECASE)
_DROP_FEATURE = re.compile(
    r"^\s*ALTER\s+TABLE\s+(?P<table>.+?)\s+DROP\s+FEATURE\s+(?P<feature>[`'\"]?[\w-]+[`'\"]?)"
    r"(?P<truncate>\s+TRUNCATE\s+HISTORY)?\s*;?\s*$",
    re.IGNORECASE,
)
_SYNC_IDENTITY = re.compile(
    r"^\s*ALTER\s+TABLE\s+(?P<table>.+?)\s+(?:ALTER|CHANGE)\s+(?:COLUMN\s+)?(?P<column>`(?:[^`]|``)+`|[\w.]+)"
    r"\s+SYNC\s+IDENTITY\s*;?\s*$",
    re.IGNORECASE,
)
_UNSET = re.compile(
    r"^\s*ALTER\s+TABLE\s+(?P<table>.+?)\s+UNSET\s+TBLPROPERTIES\s+(?P<if_exists>IF\s+EXISTS\s+)?\((?P<keys>.*)\)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)


def _location(spark: SparkSession, table: exp.Table) -> str | None:
    """The Delta table an ALTER names, or None when it is not one."""
    if table.db.lower() == "delta" and not table.catalog:
        return Table(normalize_location(table.name)).root
    name = table.sql(dialect=DeltaSpark)
    if not is_delta_table_name(spark, name):
        return None
    entry = lookup(spark, name)
    return Table(entry.location).root if entry else None


def _text(node: exp.Expression) -> str:
    return node.this if isinstance(node, exp.Literal) else node.sql(dialect=DeltaSpark)


def _path(node: exp.Expression) -> list[str]:
    """A column's name parts: ``s.z`` may come as a Dot of identifiers or as a qualified Column."""
    if isinstance(node, exp.Dot):
        return [*_path(node.this), *_path(node.expression)]
    if isinstance(node, exp.Column):
        return [p.name for p in node.parts]
    return [node.name]


def _only(action: exp.Expression, *keys: str) -> bool:
    """Whether ``action`` sets nothing but its target and ``keys``."""
    return not [k for k, v in action.args.items() if k not in ("this", *keys) and v]


def _column_def(column: exp.ColumnDef) -> tuple[list[str], StructField]:
    data_type = _parse_datatype_string(column.args["kind"].sql(dialect=DeltaSpark))
    metadata, nullable = {}, True
    for constraint in column.args.get("constraints") or []:
        kind = constraint.args.get("kind")
        if isinstance(kind, exp.CommentColumnConstraint):
            metadata["comment"] = _text(kind.this)
        elif isinstance(kind, exp.NotNullColumnConstraint) and not kind.args.get("allow_null"):
            nullable = False
        else:
            raise DeltaAnalysisException(f"ADD COLUMNS: {constraint.sql(dialect='spark')} is not supported")
    if column.args.get("position") is not None:
        raise DeltaAnalysisException(
            f"ADD COLUMNS: {column.args['position'].sql(dialect='spark')} is not supported; columns go at the end"
        )
    path = _path(column.this)
    return path, StructField(path[-1], data_type, nullable, metadata)


def run_alter(spark: SparkSession, query: str, statement: exp.Expression | None) -> bool:
    """Run ``query`` if it alters a Delta table; whether it did."""
    unclustered = _CLUSTER_BY_NONE.match(query)
    if unclustered:
        location = _location(spark, exp.to_table(unclustered.group("table"), dialect=DeltaSpark))
        if location is None:
            return False
        alter.cluster_by(open_table(spark, location), [])
        return True
    dropped = _DROP_FEATURE.match(query)
    if dropped:
        location = _location(spark, exp.to_table(dropped.group("table"), dialect=DeltaSpark))
        if location is None:
            return False
        feature = dropped.group("feature").strip("`'\"")
        drop_table_feature(spark, open_table(spark, location), feature, bool(dropped.group("truncate")))
        return True
    synced = _SYNC_IDENTITY.match(query)
    if synced:
        location = _location(spark, exp.to_table(synced.group("table"), dialect=DeltaSpark))
        if location is None:
            return False
        sync_identity(spark, open_table(spark, location), attribute_parts(synced.group("column")))
        return True
    unset = _UNSET.match(query)
    if unset:
        target = exp.to_table(unset.group("table"), dialect=DeltaSpark)
        location = _location(spark, target)
        if location is None:
            return False
        keys = [k.strip().strip("'\"`") for k in unset.group("keys").split(",") if k.strip()]
        alter.unset_properties(open_table(spark, location), keys, bool(unset.group("if_exists")))
        return True
    if not isinstance(statement, exp.Alter) or not isinstance(statement.this, exp.Table):
        return False
    location = _location(spark, statement.this)
    if location is None:
        return False
    table = open_table(spark, location)
    for action in statement.args.get("actions") or []:
        _run_action(spark, table, action)
    return True


def _run_action(spark: SparkSession, table: Table, action: exp.Expression) -> None:
    if isinstance(action, exp.AlterSet):
        unsupported = [k for k, v in action.args.items() if k != "expressions" and v]
        if unsupported:
            raise DeltaAnalysisException(
                f"{table.root}: ALTER TABLE ... SET {unsupported[0].upper()} is not supported on a Delta table"
            )
        properties = {_text(p.this): _text(p.args["value"]) for props in action.expressions for p in props.expressions}
        alter.set_properties(spark, table, properties)
    elif isinstance(action, exp.Schema):
        alter.add_columns(table, [_column_def(c) for c in action.expressions])
    elif isinstance(action, exp.ColumnDef):
        alter.add_columns(table, [_column_def(action)])
    elif isinstance(action, exp.AddConstraint):
        for constraint in action.expressions:
            check = next(e for e in constraint.expressions if isinstance(e, exp.CheckColumnConstraint))
            alter.add_constraint(spark, table, constraint.name, check.this.sql(dialect=DeltaSpark))
    elif isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper() == "CONSTRAINT":
        alter.drop_constraint(table, action.args["tables"][0].name, bool(action.args.get("exists")))
    elif isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper() in ("COLUMN", "COLUMNS"):
        named = [c for node in action.args["tables"] for c in (node.expressions if isinstance(node, exp.Schema) else [node])]
        alter.drop_columns(table, [_path(c) for c in named], bool(action.args.get("exists")))
    elif isinstance(action, exp.RenameColumn):
        alter.rename_column(table, _path(action.this), action.args["to"].name)
    elif isinstance(action, exp.ClusterProperty):
        alter.cluster_by(table, [".".join(_path(c)) for c in action.expressions])
    elif isinstance(action, exp.AlterColumn) and action.args.get("dtype") is not None and _only(action, "dtype"):
        alter.change_type(table, _path(action.this), _parse_datatype_string(action.args["dtype"].sql(dialect=DeltaSpark)))
    elif isinstance(action, exp.AlterColumn) and action.args.get("comment") is not None:
        others = [k for k, v in action.args.items() if k not in ("this", "comment") and v]
        if others:
            raise DeltaAnalysisException(f"{table.root}: ALTER COLUMN ... {others[0].upper()} is not supported on a Delta table")
        alter.set_comment(table, _path(action.this), _text(action.args["comment"]))
    else:
        raise DeltaAnalysisException(
            f"{table.root}: unsupported ALTER TABLE action on a Delta table: {action.sql(dialect='spark')}"
        )


__all__ = ["run_alter"]

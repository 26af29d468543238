"""``ALTER TABLE`` statements on Delta tables, parsed with sqlglot and run by ``alter``.

A statement is taken when its table is ``delta.`/path``` or a name the catalog knows as a
Delta table; every other ALTER goes to Spark. On a Delta table a statement is either run
(committed to the table's log, or for ``RENAME TO`` and ``SET LOCATION`` applied to the
catalog entry after delta-spark's checks) or refused by name, as delta-spark refuses it
or as something sparkdelta does not do: never handed to Spark, whose own ALTER would
change only the catalog entry and leave the Delta log as it was.

``UNSET TBLPROPERTIES`` and ``CLUSTER BY NONE`` and ``DROP FEATURE``, which sqlglot does
not parse, are recognized by a pattern; ``ALTER``/``CHANGE COLUMN`` by ``alter_grammar``.
``COMMENT ON TABLE`` of a Delta table sets its description, as in delta-spark.
"""

from __future__ import annotations

import re

from pyspark.sql import SparkSession
from pyspark.sql.types import StructField, _parse_datatype_string
from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import TokenType

from ...exceptions import DeltaAnalysisException, DeltaParseException
from ...kernel import Table
from ..catalog import is_delta_table_name, lookup, qualified_name
from ..commands import alter
from ..commands.change_column import ColumnChange, change_columns, refuse_defaults_without_feature
from ..commands.column_names import quoted
from ..commands.drop_feature import drop_table_feature
from ..commands.properties import set_properties, unset_properties
from ..commands.sync_identity import sync_identity
from ..commands.table_location import check_set_location, refuse_rename_of_path
from ..paths import normalize_location
from ..storage import open_table
from .alter_grammar import ColumnSpec, HiveChangeColumn
from .dialect import DeltaSpark
from .reads import SparkSql

_CLUSTER_BY_NONE = re.compile(r"^\s*ALTER\s+TABLE\s+(?P<table>.+?)\s+CLUSTER\s+BY\s+NONE\s*;?\s*$", re.IGNORECASE)
_DROP_FEATURE = re.compile(
    r"^\s*ALTER\s+TABLE\s+(?P<table>.+?)\s+DROP\s+FEATURE\s+(?P<feature>[`'\"]?[\w-]+[`'\"]?)"
    r"(?P<truncate>\s+TRUNCATE\s+HISTORY)?\s*;?\s*$",
    re.IGNORECASE,
)
_UNSET = re.compile(
    r"^\s*ALTER\s+TABLE\s+(?P<table>.+?)\s+UNSET\s+TBLPROPERTIES\s+(?P<if_exists>IF\s+EXISTS\s+)?\((?P<keys>.*)\)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_PARTITION_SPEC = r"(?:PARTITION\s*\(.*?\)\s*)?"
# Forms sqlglot leaves unparsed that delta-spark refuses, by what follows the table name.
_REFUSED = (
    (
        re.compile(r"^PARTITION\s*\(.*?\)\s*SET\s+LOCATION\b", re.IGNORECASE | re.DOTALL),
        "_LEGACY_ERROR_TEMP_1045",
        "ALTER TABLE SET LOCATION does not support partition for v2 tables.",
    ),
    (
        re.compile(
            _PARTITION_SPEC + r"(?:(?:ADD|DROP)\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?PARTITION|RENAME\s+TO\s+PARTITION)\b",
            re.IGNORECASE | re.DOTALL,
        ),
        "INVALID_PARTITION_OPERATION.PARTITION_MANAGEMENT_IS_UNSUPPORTED",
        "The partition command is invalid. Table {table} does not support partition management.",
    ),
    (
        re.compile(r"^RECOVER\s+PARTITIONS\b", re.IGNORECASE),
        "NOT_SUPPORTED_COMMAND_FOR_V2_TABLE",
        "ALTER TABLE ... RECOVER PARTITIONS is not supported for v2 tables.",
    ),
    (
        re.compile(_PARTITION_SPEC + r"SET\s+(?:SERDE|SERDEPROPERTIES)\b", re.IGNORECASE | re.DOTALL),
        "NOT_SUPPORTED_COMMAND_FOR_V2_TABLE",
        "ALTER TABLE ... SET [SERDE|SERDEPROPERTIES] is not supported for v2 tables.",
    ),
)


_COMMENT_ON_TABLE = re.compile(
    r"^\s*COMMENT\s+ON\s+TABLE\s+(?P<table>.+?)\s+IS\s+(?P<value>.+?)\s*;?\s*$", re.IGNORECASE | re.DOTALL
)


def run_comment(spark: SparkSession, query: str) -> bool:
    """``COMMENT ON TABLE t IS 'text' | NULL`` on a Delta table: the table's description, set as
    delta-spark sets it (``SET TBLPROPERTIES ('comment' = ...)``; NULL is the empty text).
    Whether it did: any other statement, or table, is not this one's."""
    matched = _COMMENT_ON_TABLE.match(query)
    if not matched:
        return False
    try:
        target = exp.to_table(matched.group("table"), dialect=DeltaSpark)
    except ParseError:
        return False
    location = _location(spark, target)
    if location is None:
        return False
    tokens = DeltaSpark().tokenize(matched.group("value"))
    if len(tokens) != 1 or tokens[0].token_type not in (TokenType.STRING, TokenType.NULL):
        raise DeltaParseException(
            f"cannot parse the statement {query.strip()!r}: COMMENT ON TABLE takes a string or NULL",
            errorClass="PARSE_SYNTAX_ERROR",
        )
    comment = "" if tokens[0].token_type == TokenType.NULL else tokens[0].text
    set_properties(spark, open_table(spark, location), {"comment": comment})
    return True


def _target(query: str, statement: exp.Expression | None) -> tuple[exp.Table, str] | None:
    """The table an ``ALTER TABLE`` names and the rest of the statement after that name."""
    try:
        tokens = DeltaSpark().tokenize(query)
    except Exception:  # the tokenizer's errors are Spark's to report
        return None
    if len(tokens) < 3 or tokens[0].text.upper() != "ALTER" or tokens[1].token_type != TokenType.TABLE:
        return None
    end = 2
    while end + 2 < len(tokens) and tokens[end + 1].token_type == TokenType.DOT:
        end += 2
    rest = query[tokens[end].end + 1 :].strip().rstrip(";").strip()
    if isinstance(statement, exp.Alter) and isinstance(statement.this, exp.Table):
        return statement.this, rest
    try:
        return exp.to_table(query[tokens[2].start : tokens[end].end + 1], dialect=DeltaSpark), rest
    except ParseError:
        return None


def _location(spark: SparkSession, table: exp.Table) -> str | None:
    """The Delta table an ALTER names, or None when it is not one."""
    if _is_path(table):
        return Table(normalize_location(table.name)).root
    name = _name(table)
    if not is_delta_table_name(spark, name):
        return None
    entry = lookup(spark, name)
    return Table(entry.location).root if entry else None


def _is_path(table: exp.Table) -> bool:
    return table.db.lower() == "delta" and not table.catalog


def _name(table: exp.Table) -> str:
    """The table's name, without the ``PARTITION (...)`` an ALTER may give after it."""
    named = table.copy()
    named.set("partition", None)
    return named.sql(dialect=DeltaSpark)


def _shown_name(spark: SparkSession, table: exp.Table) -> str:
    """The table as Spark's errors name it (```spark_catalog`.`default`.`t```)."""
    if _is_path(table):
        return quoted(["spark_catalog", "delta", table.name])
    return quoted(["spark_catalog", *qualified_name(spark, _name(table)).split(".", 1)])


def _text(node: exp.Expression) -> str:
    return node.this if isinstance(node, exp.Literal) else node.sql(dialect=DeltaSpark)


def _path(node: exp.Expression) -> list[str]:
    """A column's name parts: ``s.z`` may come as a Dot of identifiers or as a qualified Column."""
    if isinstance(node, exp.Dot):
        return [*_path(node.this), *_path(node.expression)]
    if isinstance(node, exp.Column):
        return [p.name for p in node.parts]
    return [node.name]


def _column_def(column: exp.ColumnDef) -> tuple[list[str], StructField, str | None]:
    data_type = _parse_datatype_string(column.args["kind"].sql(dialect=DeltaSpark))
    metadata, nullable = {}, True
    for constraint in column.args.get("constraints") or []:
        kind = constraint.args.get("kind")
        if isinstance(kind, exp.CommentColumnConstraint):
            metadata["comment"] = _text(kind.this)
        elif isinstance(kind, exp.NotNullColumnConstraint) and not kind.args.get("allow_null"):
            nullable = False
        elif isinstance(kind, exp.DefaultColumnConstraint):
            raise DeltaAnalysisException(
                "Failed to execute the command because DEFAULT values are not supported when adding new\n"
                "columns to previously existing Delta tables; please add the column without a default\n"
                "value first, then run a second ALTER TABLE ALTER COLUMN SET DEFAULT command to apply\n"
                "for future inserted rows instead.",
                errorClass="WRONG_COLUMN_DEFAULTS_FOR_DELTA_ALTER_TABLE_ADD_COLUMN_NOT_SUPPORTED",
            )
        else:
            raise DeltaAnalysisException(f"ADD COLUMNS: {constraint.sql(dialect='spark')} is not supported")
    path = _path(column.this)
    return path, StructField(path[-1], data_type, nullable, metadata), _position(column.args.get("position"))


def _position(node: exp.Expression | None) -> str | None:
    """None (no position), ``FIRST``, or the name of the column to go after."""
    if node is None:
        return None
    if str(node.args.get("position")).upper() == "FIRST":
        return "FIRST"
    return _path(node.this)[-1]


def run_alter(
    spark: SparkSession, query: str, statement: exp.Expression | None, original_sql: SparkSql, error: ParseError | None = None
) -> bool:
    """Run ``query`` if it alters a Delta table (refuse it by name if sparkdelta cannot); whether
    it did. ``statement`` is its parse, None when the parse failed with ``error``."""
    target = _target(query, statement)
    if target is None:
        return False
    table_ref, rest = target
    location = _location(spark, table_ref)
    if location is None:
        return False
    if _CLUSTER_BY_NONE.match(query):
        alter.cluster_by(open_table(spark, location), [])
        return True
    dropped = _DROP_FEATURE.match(query)
    if dropped:
        feature = dropped.group("feature").strip("`'\"")
        drop_table_feature(spark, open_table(spark, location), feature, bool(dropped.group("truncate")))
        return True
    unset = _UNSET.match(query)
    if unset:
        keys = [k.strip().strip("'\"`") for k in unset.group("keys").split(",") if k.strip()]
        # delta-spark's catalog removes properties as IF EXISTS, whatever the statement says
        unset_properties(open_table(spark, location), keys, if_exists=True)
        return True
    if not isinstance(statement, exp.Alter):
        raise _refusal(spark, table_ref, query, rest, error)
    table = open_table(spark, location)
    actions = statement.args.get("actions") or []
    if table_ref.args.get("partition") is not None:
        _refuse_partition_spec(spark, table_ref, actions)
    synced = [a for a in actions if isinstance(a, ColumnSpec) and a.args.get("sync_identity")]
    if synced:
        for action in synced:
            sync_identity(spark, table, [p.name for p in action.expressions])
        return True
    if actions and all(isinstance(a, (ColumnSpec, HiveChangeColumn)) for a in actions):
        change_columns(spark, table, [_column_change(spark, table, a) for a in actions], _shown_name(spark, table_ref))
        return True
    for action in actions:
        _run_action(spark, table, table_ref, action, original_sql, query)
    return True


def _refusal(spark: SparkSession, table: exp.Table, query: str, rest: str, error: ParseError | None) -> DeltaAnalysisException:
    """The error for an ALTER of a Delta table that sqlglot could not parse into actions."""
    for pattern, error_class, message in _REFUSED:
        if pattern.match(rest):
            return DeltaAnalysisException(message.format(table=_shown_name(spark, table)), errorClass=error_class)
    if error is not None:
        return DeltaParseException(f"cannot parse the statement {query.strip()!r}: {error}", errorClass="PARSE_SYNTAX_ERROR")
    form = " ".join(rest.split()[:2]).upper()
    return DeltaAnalysisException(f"ALTER TABLE ... {form} is not supported by sparkdelta on a Delta table ({_name(table)})")


def _refuse_partition_spec(spark: SparkSession, table: exp.Table, actions: list[exp.Expression]) -> None:
    """``ALTER TABLE t PARTITION (...) ...``: Delta tables have no partitions to manage."""
    if any(isinstance(a, HiveChangeColumn) for a in actions):
        raise DeltaParseException(
            "The statement or clause: ALTER TABLE ... PARTITION ... CHANGE COLUMN is not valid.",
            errorClass="INVALID_STATEMENT_OR_CLAUSE",
        )
    if any(isinstance(a, exp.AlterSet) and _serde(a) for a in actions):
        raise DeltaAnalysisException(
            "ALTER TABLE ... SET [SERDE|SERDEPROPERTIES] is not supported for v2 tables.",
            errorClass="NOT_SUPPORTED_COMMAND_FOR_V2_TABLE",
        )
    if any(isinstance(a, exp.AlterSet) and a.args.get("location") is not None for a in actions):
        raise DeltaAnalysisException(
            "ALTER TABLE SET LOCATION does not support partition for v2 tables.", errorClass="_LEGACY_ERROR_TEMP_1045"
        )
    raise DeltaAnalysisException(
        f"The partition command is invalid. Table {_shown_name(spark, table)} does not support partition management.",
        errorClass="INVALID_PARTITION_OPERATION.PARTITION_MANAGEMENT_IS_UNSUPPORTED",
    )


def _column_change(spark: SparkSession, table: Table, action: exp.Expression) -> ColumnChange:
    """An ``ALTER COLUMN`` spec or a Hive ``CHANGE COLUMN`` as a change, with Spark's parse-time refusals."""
    path = tuple(p.name for p in action.expressions)
    type_sql = action.args.get("type_sql")
    data_type = _parse_datatype_string(type_sql) if type_sql else None
    position = action.args.get("position")
    first = position is not None and str(position.args.get("position")).upper() == "FIRST"
    after = position.this.name if position is not None and not first else None
    comment = action.args.get("comment")
    if isinstance(action, HiveChangeColumn):
        if action.args["new_name"].name.lower() != path[-1].lower():
            raise DeltaParseException(
                "Renaming column is not supported in Hive-style ALTER COLUMN, please run RENAME COLUMN instead.",
                errorClass="_LEGACY_ERROR_TEMP_0034",
            )
        if action.args.get("not_null"):
            raise DeltaParseException(
                "NOT NULL is not supported in Hive-style ALTER COLUMN, please run ALTER COLUMN ... SET/DROP NOT NULL instead.",
                errorClass="_LEGACY_ERROR_TEMP_0034",
            )
        return ColumnChange(path, data_type, comment, None, first, after)
    default = action.args.get("default")
    if default is not None:
        refuse_defaults_without_feature(table)
    nullable = action.args.get("nullable")
    change = ColumnChange(
        path,
        data_type,
        comment,
        None if nullable is None else nullable.this is True,
        first,
        after,
        bool(action.args.get("drop_default")),
        default.sql(dialect=DeltaSpark) if default is not None else None,
    )
    if change == ColumnChange(path):
        raise DeltaParseException(
            "Operation not allowed: ALTER TABLE table ALTER COLUMN requires a TYPE, a SET/DROP, a COMMENT, or a FIRST/AFTER.",
            errorClass="_LEGACY_ERROR_TEMP_0035",
        )
    return change


def _run_action(
    spark: SparkSession, table: Table, table_ref: exp.Table, action: exp.Expression, original_sql: SparkSql, query: str
) -> None:
    if isinstance(action, exp.AlterSet) and action.args.get("location") is not None and _only(action, "location"):
        check_set_location(spark, table, None if _is_path(table_ref) else _name(table_ref), _text(action.args["location"]))
        original_sql(spark, query)  # the catalog entry's location: Spark's own
    elif isinstance(action, exp.AlterSet) and _serde(action):
        raise DeltaAnalysisException(
            "ALTER TABLE ... SET [SERDE|SERDEPROPERTIES] is not supported for v2 tables.",
            errorClass="NOT_SUPPORTED_COMMAND_FOR_V2_TABLE",
        )
    elif isinstance(action, exp.AlterSet):
        unsupported = [k for k, v in action.args.items() if k != "expressions" and v]
        if unsupported:
            raise DeltaAnalysisException(
                f"{table.root}: ALTER TABLE ... SET {unsupported[0].upper()} is not supported on a Delta table"
            )
        properties = {_text(p.this): _text(p.args["value"]) for props in action.expressions for p in props.expressions}
        set_properties(spark, table, properties)
    elif isinstance(action, exp.AlterRename):
        refuse_rename_of_path(None if _is_path(table_ref) else _name(table_ref), table_ref.name)
        original_sql(spark, query)  # a catalog entry's name: Spark's own, as in delta-spark
    elif isinstance(action, (exp.AddPartition, exp.DropPartition)):
        _refuse_partition_spec(spark, table_ref, [action])
    elif isinstance(action, exp.Schema):
        alter.add_columns(table, [_column_def(c) for c in action.expressions])
    elif isinstance(action, exp.ColumnDef):
        alter.add_columns(table, [_column_def(action)])
    elif isinstance(action, exp.AddConstraint):
        for constraint in action.expressions:
            check = next(e for e in constraint.expressions if isinstance(e, exp.CheckColumnConstraint))
            text = _check_text(query) if len(action.expressions) == 1 else None
            alter.add_constraint(spark, table, constraint.name, text or check.this.sql(dialect=DeltaSpark))
    elif isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper() == "CONSTRAINT":
        alter.drop_constraint(table, action.args["tables"][0].name, bool(action.args.get("exists")))
    elif isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper() in ("COLUMN", "COLUMNS"):
        named = [c for node in action.args["tables"] for c in (node.expressions if isinstance(node, exp.Schema) else [node])]
        alter.drop_columns(table, [_path(c) for c in named], bool(action.args.get("exists")))
    elif isinstance(action, exp.RenameColumn):
        alter.rename_column(table, _path(action.this), action.args["to"].name)
    elif isinstance(action, exp.ClusterProperty):
        alter.cluster_by(table, [".".join(_path(c)) for c in action.expressions])
    else:
        raise DeltaAnalysisException(
            f"ALTER TABLE ... {_action_name(action)} is not supported by sparkdelta on a Delta table ({_name(table_ref)})"
        )


def _check_text(query: str) -> str | None:
    """A CHECK constraint's expression as delta-spark's parser keeps it: its tokens, as written,
    one space apart (``abs ( s . x ) >= 0``): the text stored in ``delta.constraints.*`` and
    in the commit's parameters."""
    tokens = DeltaSpark().tokenize(query)
    start = next(
        (i for i, t in enumerate(tokens[:-1]) if t.text.upper() == "CHECK" and tokens[i + 1].token_type == TokenType.L_PAREN),
        None,
    )
    if start is None or tokens[-1].token_type != TokenType.R_PAREN:
        return None
    return " ".join(query[t.start : t.end + 1] for t in tokens[start + 2 : -1])


def _only(action: exp.Expression, *keys: str) -> bool:
    """Whether ``action`` sets nothing but its target and ``keys``."""
    return not [k for k, v in action.args.items() if k not in ("this", *keys) and v]


def _serde(action: exp.AlterSet) -> bool:
    return bool(action.args.get("serde")) or any(
        isinstance(p, exp.SerdeProperties) for props in action.expressions for p in props.expressions
    )


def _action_name(action: exp.Expression) -> str:
    """A refused action by its statement's words (``REPLACE COLUMNS``, ``ALTER COLUMN``...)."""
    names = {exp.ReplaceColumns: "REPLACE COLUMNS", exp.AlterColumn: "ALTER COLUMN", exp.Command: "DROP"}
    name = next((n for cls, n in names.items() if isinstance(action, cls)), None)
    if name is not None:
        return name
    try:
        return " ".join(action.sql(dialect=DeltaSpark).split()[:2]).upper()
    except Exception:  # an expression sqlglot cannot write back
        return type(action).__name__.upper()


__all__ = ["run_alter", "run_comment"]

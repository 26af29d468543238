"""The partition predicates of OPTIMIZE and REORG, checked and recorded as delta-spark does.

delta-spark parses each ``where`` into an unresolved Catalyst expression, refuses one with
a subquery or naming a column that is not a partition column
(``DELTA_NON_PARTITION_COLUMN_REFERENCE``), and records the expressions' ``toString`` in
the commit's ``predicate`` parameter. ``catalyst_text`` does that parse and print in
Python; the few forms it leaves alone are read by sqlglot and recorded as written.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from ...exceptions import DeltaAnalysisException
from ...kernel import Snapshot
from ...kernel.scan import PARTITION_VALUES, conjunction, partition_keys
from ..expressions.tree import Opaque, Ref, from_sql, walk
from ..read.predicates import kernel_predicate
from .catalyst_text import ParsedPredicate, parse_predicate

_KEY = "__sparkdelta_partition_key"


def _conf_flag(spark: SparkSession, key: str) -> bool:
    return (spark.conf.get(key, "false") or "false").strip().lower() == "true"


def parsed_predicate(spark: SparkSession, text: str) -> ParsedPredicate:
    """``text`` parsed as Spark's parser would, under the session's settings."""
    parsed = parse_predicate(
        text,
        time_zone=spark.conf.get("spark.sql.session.timeZone", None),
        escaped_string_literals=_conf_flag(spark, "spark.sql.parser.escapedStringLiterals"),
        double_quoted_identifiers=_conf_flag(spark, "spark.sql.ansi.doubleQuotedIdentifiers"),
    )
    return parsed if parsed is not None else _parsed_by_sqlglot(text)


def _parsed_by_sqlglot(text: str) -> ParsedPredicate:
    """What ``catalyst_text`` leaves alone (CASE, lambdas, functions Spark's grammar treats
    specially), read through sqlglot: its column names, and the text as written, since no
    API of a Spark Connect session prints Catalyst's unresolved form of it."""
    expression = from_sql(text)
    if isinstance(expression, Opaque) and expression.kind == "unparsed":
        raise DeltaAnalysisException(f"Cannot recognize the predicate '{text}'", errorClass="DELTA_FAILED_RECOGNIZE_PREDICATE")
    nodes = walk(expression)
    if any(isinstance(n, Opaque) and n.kind == "subquery" for n in nodes):
        raise DeltaAnalysisException(
            "Subquery is not supported in partition predicates.", errorClass="DELTA_UNSUPPORTED_SUBQUERY_IN_PARTITION_PREDICATES"
        )
    names: list[str] = []
    for node in nodes:
        if isinstance(node, Ref) and ".".join(node.parts) not in names:
            names.append(".".join(node.parts))
    return ParsedPredicate(text, tuple(names))


def checked_partition_predicates(spark: SparkSession, snapshot: Snapshot, texts: Sequence[str]) -> list[str]:
    """Each predicate as delta-spark records it, once it names partition columns only."""
    partition_columns = list(snapshot.partition_columns)
    case_sensitive = _conf_flag(spark, "spark.sql.caseSensitive")
    known = set(partition_columns) if case_sensitive else {c.lower() for c in partition_columns}
    recorded = []
    for text in texts:
        parsed = parsed_predicate(spark, text)
        for name in parsed.references:
            if (name if case_sensitive else name.lower()) not in known:
                raise DeltaAnalysisException(
                    f"Predicate references non-partition column '{name}'. "
                    f"Only the partition columns may be referenced: [{', '.join(partition_columns)}]",
                    errorClass="DELTA_NON_PARTITION_COLUMN_REFERENCE",
                )
        recorded.append(parsed.text)
    return recorded


def files_in_selected_partitions(spark: SparkSession, snapshot: Snapshot, texts: Sequence[str]) -> pa.Table:
    """The scan files of the partitions every predicate selects (all files without one).

    The kernel's predicates skip files conservatively (a file they cannot rule out is kept:
    right for a read, which filters its rows again, not for choosing what to rewrite), so
    they only narrow the candidates; Spark then evaluates the predicates themselves on the
    distinct partition values left, as delta-spark does, functions and casts included.
    """
    if not texts:
        return snapshot.scan().files
    pruning = [kernel_predicate(spark, snapshot, text) for text in texts]
    files = snapshot.scan(conjunction([p for p in pruning if p is not None])).files
    if files.num_rows == 0:
        return files
    keys = partition_keys(files.column(PARTITION_VALUES))
    values = pa.Table.from_struct_array(files.column(PARTITION_VALUES)).append_column(_KEY, keys)
    partitions = spark.createDataFrame(values.take(pc.index_in(pc.unique(keys), value_set=keys)))
    for text in texts:
        partitions = partitions.filter(text)
    selected = [row[0] for row in partitions.select(_KEY).collect()]
    return files.filter(pc.is_in(keys, value_set=pa.array(selected, pa.string())))

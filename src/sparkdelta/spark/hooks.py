"""Route ``format("delta")`` on Spark's DataFrameReader and DataFrameWriter to sparkdelta.

The wrappers remember the format, options, mode and partition columns set on a reader or
writer (a classic session keeps them on the JVM side, out of Python's reach) and, for
``delta`` only, call sparkdelta instead of Spark's data source. The same wrappers go on
the classic and the Spark Connect classes (``pyspark_classes.py``).
"""

from __future__ import annotations

import functools
import os
import string
import sys
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter

from ..exceptions import DeltaAnalysisException, DeltaIllegalArgumentException, spark_errors
from .catalog import is_delta_table_name
from .commands.auto_optimize import auto_compact
from .named_tables import insert_into as insert_into_delta
from .named_tables import read_table
from .named_tables import save_as_table as save_delta_table
from .options import DeltaOptions, keyed
from .pyspark_classes import Family, families, reader_session, writer_rows
from .read.scan import filter_with_pruning, input_files_from_log
from .read.scan import load as load_delta
from .recorded import record_format, record_option, record_options, recording, settings_of
from .session_catalog import release_delta_spark_catalog
from .source import ensure_delta_source
from .sql.reads import frame_name
from .sql.runner import run_sql
from .storage import remember_settings
from .stream.reader import install_stream_reader
from .stream.sink import install_stream_writer
from .write.dataframe import write_dataframe
from .write.post_commit import register_post_commit_hook
from .writer_v2 import install_writer_v2

DELTA = "delta"


def _parsed(state: dict[str, Any], options: dict[str, Any]) -> DeltaOptions:
    """The recorded options and those given to the final call (which win), parsed once."""
    return DeltaOptions.parse({**state["options"], **keyed(options)})


def _record_mode(state: dict[str, Any], mode: str | None) -> None:
    state["mode"] = mode


def _column_names(cols: tuple[Any, ...]) -> list[str]:
    return list(cols[0] if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else cols)


def _record_partition_by(state: dict[str, Any], *cols: Any) -> None:
    state["partition_by"] = _column_names(cols)


def _record_cluster_by(state: dict[str, Any], *cols: Any) -> None:
    state["cluster_by"] = _column_names(cols)


def _reader_load(original: Callable[..., DataFrame]) -> Callable[..., DataFrame]:
    @functools.wraps(original)
    @spark_errors
    def load(self: DataFrameReader, path: Any = None, format: str | None = None, schema: Any = None, **options: Any) -> DataFrame:
        state = settings_of(self)
        if (format or state["format"] or "").lower() != DELTA:
            return original(self, path, format, schema, **options)
        if not isinstance(path, str):
            raise DeltaIllegalArgumentException("format('delta').load() needs one table path")
        return load_delta(reader_session(self), path, _parsed(state, options))

    return load


def _writer_save(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    @spark_errors
    def save(
        self: DataFrameWriter,
        path: str | None = None,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: Any = None,
        **options: Any,
    ) -> None:
        state = settings_of(self)
        if (format or state["format"] or "").lower() != DELTA:
            return original(self, path, format, mode, partitionBy, **options)
        if path is None:
            raise DeltaIllegalArgumentException("format('delta').save() needs a table path")
        write_dataframe(
            writer_rows(self),
            path,
            mode=(mode or state["mode"] or "errorifexists"),
            partition_by=_partitions(state, partitionBy, path),
            options=_parsed(state, options),
            cluster_by=state["cluster_by"],
        )
        return None

    return save


def _partitions(state: dict[str, Any], partition_by: Any, table: str) -> list[str] | None:
    """The write's partition columns (``save``'s argument, else ``partitionBy``'s), refused
    beside ``clusterBy`` as Spark refuses them: a classic writer at the ``clusterBy`` call, a
    Connect server only when it plans the write, which a Delta write never reaches."""
    chosen = partition_by if partition_by is not None else state["partition_by"]
    partitions = [chosen] if isinstance(chosen, str) else (list(chosen) if chosen else None)
    if partitions and state["cluster_by"]:
        raise DeltaAnalysisException(
            f"{table}: Cannot specify both CLUSTER BY and PARTITIONED BY.",
            errorClass="SPECIFY_CLUSTER_BY_WITH_PARTITIONED_BY_IS_NOT_ALLOWED",
        )
    return partitions


def _writer_save_as_table(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def save_as_table(
        self: DataFrameWriter,
        name: str,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: Any = None,
        **options: Any,
    ) -> None:
        state = settings_of(self)
        chosen = (format or state["format"] or "").lower()
        rows = writer_rows(self)
        if chosen != DELTA and not (chosen == "" and is_delta_table_name(rows.sparkSession, name)):
            return original(self, name, format, mode, partitionBy, **options)
        save_delta_table(
            rows,
            name,
            mode or state["mode"] or "errorifexists",
            _partitions(state, partitionBy, name),
            _parsed(state, options),
            cluster_by=state["cluster_by"],
        )
        return None

    return save_as_table


def _writer_insert_into(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def insert_into(self: DataFrameWriter, tableName: str, overwrite: bool | None = None) -> None:
        rows = writer_rows(self)
        if not is_delta_table_name(rows.sparkSession, tableName):
            return original(self, tableName, overwrite)
        insert_into_delta(rows, tableName, bool(overwrite) or (settings_of(self)["mode"] or "").lower() == "overwrite")
        return None

    return insert_into


def _reader_table(original: Callable[..., DataFrame]) -> Callable[..., DataFrame]:
    @functools.wraps(original)
    def table(self: DataFrameReader, tableName: str) -> DataFrame:
        spark = reader_session(self)
        if not is_delta_table_name(spark, tableName):
            return original(self, tableName)
        return read_table(spark, tableName, _parsed(settings_of(self), {}))

    return table


def _session_table(original: Callable[..., DataFrame]) -> Callable[..., DataFrame]:
    @functools.wraps(original)
    def table(self: SparkSession, tableName: str) -> DataFrame:
        ensure_delta_source(self)  # before Spark reaches the catalog: its metastore must be free
        if not is_delta_table_name(self, tableName):
            return original(self, tableName)
        return read_table(self, tableName, DeltaOptions())

    return table


def _session_sql(original: Callable[..., DataFrame]) -> Callable[..., DataFrame]:
    @functools.wraps(original)
    def sql(self: SparkSession, sqlQuery: str, args: Any = None, **kwargs: Any) -> DataFrame:
        ensure_delta_source(self)  # before Spark reaches the catalog: its metastore must be free
        if not kwargs:
            return run_sql(self, sqlQuery, original, args)
        text, frames = _frames_placed(sqlQuery, kwargs)
        others = {key: value for key, value in kwargs.items() if not isinstance(value, DataFrame)}
        if others:  # the other arguments are formatted as Spark formats them
            formatter = sql_formatter(self)
            try:
                text = formatter.format(text, **others)
            finally:
                formatter.clear()
        else:
            text = text.format()  # the escaped braces of the text itself
        return run_sql(self, text, original, args, frames)

    return sql


def _frames_placed(query: str, kwargs: dict[str, Any]) -> tuple[str, dict[str, DataFrame]]:
    """``query`` with each ``{name}`` of a DataFrame argument replaced by a placeholder that
    sparkdelta's SQL binds when the statement runs (``reads.sql_with_frames``), and those
    DataFrames by placeholder; the rest of the format string is kept for Spark's formatter."""
    frames: dict[str, DataFrame] = {}
    placed: dict[str, str] = {}
    parts = []
    for literal, field, spec, conversion in string.Formatter().parse(query):
        parts.append(literal.replace("{", "{{").replace("}", "}}"))
        if field is None:
            continue
        value = kwargs.get(field)
        if isinstance(value, DataFrame) and not spec and not conversion:
            if field not in placed:
                placed[field] = frame_name()
                frames[placed[field]] = value
            parts.append(placed[field])
        else:
            parts.append("{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}")
    return "".join(parts), frames


def _session_init(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def init(self: SparkSession, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        release_delta_spark_catalog(self)

    return init


def sql_formatter(spark: SparkSession) -> Any:
    """The formatter Spark's own ``spark.sql(query, **kwargs)`` uses for this kind of session."""
    if type(spark).__module__.startswith("pyspark.sql.connect."):
        from pyspark.sql.connect.sql_formatter import SQLStringFormatter as ConnectFormatter

        return ConnectFormatter(spark)  # type: ignore[arg-type]
    from pyspark.sql.sql_formatter import SQLStringFormatter

    return SQLStringFormatter(spark)


def _install_family(family: Family) -> None:
    """Wrap one implementation's reader, writers, DataFrame and session classes."""
    reader, writer, dataframe, session = family.reader, family.writer, family.dataframe, family.session
    for cls in (reader, writer):
        cls.format = recording(cls.format, record_format)
        cls.option = recording(cls.option, record_option)
        cls.options = recording(cls.options, record_options)
    writer.mode = recording(writer.mode, _record_mode)
    writer.partitionBy = recording(writer.partitionBy, _record_partition_by)
    writer.clusterBy = recording(writer.clusterBy, _record_cluster_by)
    reader.load = _reader_load(reader.load)
    dataframe.filter = filter_with_pruning(dataframe.filter)
    dataframe.where = filter_with_pruning(dataframe.where)
    dataframe.inputFiles = input_files_from_log(dataframe.inputFiles)
    writer.save = _writer_save(writer.save)
    writer.saveAsTable = _writer_save_as_table(writer.saveAsTable)
    writer.insertInto = _writer_insert_into(writer.insertInto)
    reader.table = _reader_table(reader.table)
    session.table = _session_table(session.table)
    session.sql = _session_sql(session.sql)
    if family.name == "classic":
        # Sessions built with delta-spark's settings, by any code, before or after this call.
        # A Connect server's catalog is the server's own, out of the client's reach.
        session.__init__ = _session_init(session.__init__)
    else:
        remember_settings(family.conf)  # the server redacts secrets it reports
    install_writer_v2(family.writer_v2)


def install() -> None:
    """Wrap the readers, the writers (``write``, ``writeTo``, ``writeStream``), ``DataFrame.filter`` and session creation once per process."""
    if getattr(DataFrameReader, "_sparkdelta_installed", False):
        return
    # Python workers (the streaming source, the data source) must import sparkdelta: they run
    # this interpreter unless the user chose one. Read when a SparkContext starts.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for family in families():
        _install_family(family)
    active = SparkSession.getActiveSession()
    if active is not None:
        release_delta_spark_catalog(active)
    register_post_commit_hook("auto compaction", auto_compact)
    install_stream_reader()
    install_stream_writer()
    DataFrameReader._sparkdelta_installed = True  # type: ignore[attr-defined]

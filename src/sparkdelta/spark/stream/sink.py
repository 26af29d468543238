"""``df.writeStream.format("delta")``: delta-spark's streaming sink (``DeltaSink``) without its jar.

Spark keeps a ``DataStreamWriter``'s settings on the JVM side, so its setters are wrapped
to remember them, as ``hooks.py`` does for batch writers. For ``delta``, ``start(path)``
and ``toTable(name)`` start a fresh writer with the same options, output mode, trigger
and query name whose ``foreachBatch`` function writes each micro-batch with the batch
writer (Spark's Parquet writer, one commit). Partition columns stay on the Python side:
Spark refuses them on a ``foreachBatch`` writer.

Each commit is a ``STREAMING UPDATE`` carrying a ``txn`` action whose appId is the query
id and whose version is the batch id, as delta-spark's. A batch Spark runs again after a
restart (it planned the batch but lost the record of finishing it) finds its version in
the log and writes nothing: exactly once across restarts. The query id is
``StreamingQuery.id``, the id Spark keeps in ``<checkpointLocation>/metadata`` and gives a
restarted query; taking it from the started query rather than the file spares us Spark's
resolution of the checkpoint folder (a session-wide root, a query name) and its storage
credentials. Batches may run before ``start()`` returns it, so they wait for it.

On Spark Connect the same wrappers go on Connect's ``DataStreamWriter``, and the sink
runs on the server: Connect pickles the ``foreachBatch`` function to a Python process
there, which calls it with a Connect session of its own, so the server's Python must
import this sparkdelta (``server.py`` refuses the stream by name otherwise). The started
query's id reaches that process through the client's session conf (a key of the sink's
own), which the process reads from the client's session (``_QueryIdChannel``).

``toTable`` creates a missing table when the query starts (delta-spark's ``CREATE TABLE``
at version 0), after every check that can fail without starting it; if the start still
fails, the new table and its catalog entry are removed, so a failed start never leaves a
name behind (delta-spark keeps it).
"""

from __future__ import annotations

import functools
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter
from pyspark.sql.types import ArrayType, DataType, MapType, NullType, StructType

from ...exceptions import DeltaAnalysisException, DeltaIllegalArgumentException, DeltaRuntimeException, spark_errors
from ..catalog import CatalogEntry, is_temp_view, lookup, unregister
from ..commands.create_table import CreateTableResult, TableSpec, create_table
from ..options import DeltaOptions
from ..pyspark_classes import families, is_connect
from ..storage import open_table
from ..write.dataframe import write_dataframe
from ..write.schema import new_table_schema
from .server import require_server_sparkdelta

DELTA = "delta"
STREAMING_UPDATE = "STREAMING UPDATE"
_OUTPUT_MODES = {"append": "Append", "complete": "Complete"}
_SESSION_CHECKPOINT = "spark.sql.streaming.checkpointLocation"
_LEGACY_PATH_OPTION = "spark.sql.legacy.pathOptionBehavior.enabled"
_NOT_MICRO_BATCH = ("continuous", "realTime")  # triggers that do not run micro-batches

Start = Callable[..., StreamingQuery]  # DataStreamWriter.start as pyspark defines it


@dataclass
class _Settings:
    """What was set on one ``DataStreamWriter``; options as given, a key's later spelling replacing it."""

    format: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    output_mode: str | None = None
    partition_by: list[str] | None = None
    cluster_by: list[str] | None = None
    trigger: dict[str, Any] | None = None
    query_name: str | None = None

    def set_option(self, key: str, value: Any) -> None:
        for known in [k for k in self.options if k.lower() == key.lower()]:
            del self.options[known]
        self.options[key] = value

    def option(self, key: str) -> Any:
        return next((v for k, v in self.options.items() if k.lower() == key.lower()), None)


def _settings(writer: DataStreamWriter) -> _Settings:
    found = writer.__dict__.get("_sparkdelta_stream")
    if found is None:
        found = writer.__dict__["_sparkdelta_stream"] = _Settings()
    return found


def _session(writer: DataStreamWriter) -> SparkSession:
    """The writer's session (classic keeps it as ``_spark``, Connect as ``_session``)."""
    found = writer.__dict__.get("_spark") or writer.__dict__.get("_session")
    assert found is not None, f"no session on {type(writer).__name__}"
    return found


def _stream(writer: DataStreamWriter) -> DataFrame:
    """The streaming rows the writer writes (Connect keeps their plan)."""
    rows = writer.__dict__.get("_df")
    if isinstance(rows, DataFrame):
        return rows
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    return ConnectDataFrame(writer._write_stream._child, writer._session)  # type: ignore[attr-defined]


def _column_names(cols: tuple[Any, ...]) -> list[str]:
    return list(cols[0] if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else cols)


def _remember_format(settings: _Settings, source: str) -> None:
    settings.format = source.lower()


def _remember_option(settings: _Settings, key: str, value: Any) -> None:
    settings.set_option(key, value)


def _remember_options(settings: _Settings, **options: Any) -> None:
    for key, value in options.items():
        settings.set_option(key, value)


def _remember_output_mode(settings: _Settings, mode: str) -> None:
    settings.output_mode = mode.lower()


def _remember_partition_by(settings: _Settings, *cols: Any) -> None:
    settings.partition_by = _column_names(cols)


def _remember_cluster_by(settings: _Settings, *cols: Any) -> None:
    settings.cluster_by = _column_names(cols)


def _remember_trigger(settings: _Settings, **trigger: Any) -> None:
    settings.trigger = trigger


def _remember_query_name(settings: _Settings, name: str) -> None:
    settings.query_name = name


def _remember_foreach(settings: _Settings, function: Any) -> None:
    settings.format = "foreach"  # the writer's sink is now the function, not a format


def _remember_foreach_batch(settings: _Settings, function: Any) -> None:
    settings.format = "foreachbatch"


def _remembering(original: Callable[..., Any], remember: Callable[..., None]) -> Callable[..., Any]:
    """``original``, then ``remember`` its arguments: only a setting Spark accepted is kept."""

    @functools.wraps(original)
    def wrapper(self: DataStreamWriter, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        remember(_settings(self), *args, **kwargs)
        return result

    return wrapper


def _apply(
    writer: DataStreamWriter, format: str | None, mode: str | None, partition_by: Any, name: str | None, options: dict[str, Any]
) -> None:
    """The keyword arguments of ``start`` and ``toTable``, set as pyspark sets them."""
    writer.options(**options)
    if mode is not None:
        writer.outputMode(mode)
    if partition_by is not None:
        writer.partitionBy(partition_by)
    if format is not None:
        writer.format(format)
    if name is not None:
        writer.queryName(name)


@dataclass(frozen=True)
class _Plan:
    """A Delta stream's checked settings: the table's writer options, Spark's output mode
    name (``Append``, ``Complete``) and the columns to partition or cluster a new table by."""

    options: DeltaOptions
    output_mode: str
    partition_by: list[str] | None
    cluster_by: list[str] | None


def _has_null_type(data_type: DataType) -> bool:
    if isinstance(data_type, NullType):
        return True
    if isinstance(data_type, StructType):
        return any(_has_null_type(f.dataType) for f in data_type.fields)
    if isinstance(data_type, ArrayType):
        return _has_null_type(data_type.elementType)
    if isinstance(data_type, MapType):
        return _has_null_type(data_type.keyType) or _has_null_type(data_type.valueType)
    return False


def _existing_columns(schema: StructType, names: list[str] | None, kind: str, where: str) -> list[str] | None:
    """``names`` as the stream spells them (matched case-insensitively), as Spark checks them at start."""
    if names is None:
        return None
    by_name = {f.name.lower(): f.name for f in schema.fields}
    for name in names:
        if name.lower() not in by_name:
            raise DeltaAnalysisException(
                f"{where}: {kind} column {name} not found in existing columns ({', '.join(schema.fieldNames())})"
            )
    return [by_name[n.lower()] for n in names]


def _checked(writer: DataStreamWriter, where: str) -> _Plan:
    """What delta-spark and Spark refuse when the query starts, refused before anything is
    written; and NullType columns, which delta-spark refuses at the first batch, though the
    stream's schema is known now."""
    settings = _settings(writer)
    spark = _session(writer)
    mode = settings.output_mode or "append"
    if mode not in _OUTPUT_MODES:
        raise DeltaAnalysisException(
            f"Data source delta does not support {mode.capitalize()} output mode ({where}): "
            "a Delta sink appends each batch or, in complete mode, replaces the table with it",
            errorClass="DELTA_UNSUPPORTED_OUTPUT_MODE",
        )
    options = DeltaOptions.parse(settings.options)
    schema = _stream(writer).schema
    if _has_null_type(schema):
        raise DeltaAnalysisException(
            f"Delta doesn't accept NullTypes in the schema for streaming writes ({where}); cast the null columns to a type",
            errorClass="DELTA_NULL_SCHEMA_IN_STREAMING_WRITE",
        )
    chosen = [kind for kind in _NOT_MICRO_BATCH if (settings.trigger or {}).get(kind) is not None]
    if chosen:
        raise DeltaAnalysisException(
            f"{where}: the Delta sink writes micro-batches, not with a {chosen[0]} trigger; "
            "use the default trigger, processingTime, once or availableNow"
        )
    partition_by = _existing_columns(schema, settings.partition_by, "partition", where)
    cluster_by = _existing_columns(schema, settings.cluster_by, "clustering", where)
    if settings.option("checkpointLocation") is None and not spark.conf.get(_SESSION_CHECKPOINT, None):
        raise DeltaAnalysisException(
            'checkpointLocation must be specified either through option("checkpointLocation", ...) or '
            f'SparkSession.conf.set("{_SESSION_CHECKPOINT}", ...) ({where})'
        )
    require_server_sparkdelta(spark, "writeStream.format('delta')")  # before toTable creates a table
    return _Plan(options, _OUTPUT_MODES[mode], partition_by, cluster_by)


class _QueryIdChannel:
    """The started query's id, from the client to a Connect server's ``foreachBatch`` process.

    That process runs each batch on a session Spark cloned from the client's at the
    start, whose conf cannot see what the client sets after it; so the client sets the id
    in its own session's conf, under this channel's key, and the process reads it from
    the client's session, which it reaches as Connect's ``foreachBatch`` worker reaches
    sessions (``SPARK_CONNECT_LOCAL_URL``, with the session id).
    """

    _WAIT_SECONDS = 600.0

    def __init__(self, spark: SparkSession) -> None:
        self.key = f"spark.sparkdelta.streaming.{uuid.uuid4().hex}.queryId"
        self.session_id = str(spark.session_id)  # type: ignore[attr-defined]

    def send(self, spark: SparkSession, query_id: str) -> None:
        spark.conf.set(self.key, query_id)

    def receive(self) -> str | None:
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        client = ConnectSession.builder.remote(f"{os.environ['SPARK_CONNECT_LOCAL_URL']};session_id={self.session_id}").create()
        deadline = time.monotonic() + self._WAIT_SECONDS
        while time.monotonic() < deadline:
            found = client.conf.get(self.key, None)
            if found is not None:
                return found or None
            time.sleep(0.1)
        return None


class _Sink:
    """The ``foreachBatch`` function: each micro-batch, one commit with the query's ``txn``."""

    def __init__(self, path: str, plan: _Plan, spark: SparkSession) -> None:
        self.path = path
        self.plan = plan
        self._query_id: str | None = None
        self._started = threading.Event()
        self._channel = _QueryIdChannel(spark) if is_connect(spark) else None

    def started(self, spark: SparkSession, query_id: str | None) -> None:
        """The started query's id; None when the start failed (a batch then has no id to write with)."""
        self._query_id = query_id
        if self._channel is not None:
            self._channel.send(spark, query_id or "")
        self._started.set()

    def __getstate__(self) -> dict[str, Any]:
        # Pickled to a Connect server's foreachBatch process, which learns the id by the channel.
        return {k: v for k, v in self.__dict__.items() if k != "_started"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._started = threading.Event()

    def _started_query_id(self) -> str | None:
        if self._channel is None or self._started.is_set():
            self._started.wait()
            return self._query_id
        self._query_id = self._channel.receive()  # once per process: later batches find it set
        self._started.set()
        return self._query_id

    @spark_errors
    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        query_id = self._started_query_id()
        if query_id is None:
            raise DeltaRuntimeException(f"{self.path}: the streaming query writing this batch failed to start")
        plan = self.plan
        # delta-spark's sink takes no replaceWhere, and complete mode replaces every file;
        # a batch already in the log (txn version >= batch id) is skipped by the writer.
        options = replace(
            plan.options, txn_app_id=query_id, txn_version=batch_id, replace_where=None, partition_overwrite_mode="static"
        )
        write_dataframe(
            batch,
            self.path,
            "overwrite" if plan.output_mode == "Complete" else "append",
            plan.partition_by,
            options,
            operation=(STREAMING_UPDATE, {"outputMode": plan.output_mode, "queryId": query_id, "epochId": str(batch_id)}),
            cluster_by=plan.cluster_by,
            added_files_metric="numAddedFiles",
        )


def _run(writer: DataStreamWriter, sink: _Sink, start: Start) -> StreamingQuery:
    """Start ``sink`` as a ``foreachBatch`` query with the writer's options, output mode, trigger and name."""
    settings = _settings(writer)
    spark = _session(writer)
    fresh = _stream(writer).writeStream
    fresh.options(**settings.options)
    if settings.output_mode is not None:
        fresh.outputMode(settings.output_mode)  # Spark checks the query against it
    if settings.trigger is not None:
        fresh.trigger(**settings.trigger)
    if settings.query_name is not None:
        fresh.queryName(settings.query_name)
    fresh.foreachBatch(sink)
    try:
        query = start(fresh)
    except BaseException:
        sink.started(spark, None)
        raise
    sink.started(spark, query.id)
    return query


@spark_errors
def _start_path(writer: DataStreamWriter, path: str | None, start: Start) -> StreamingQuery:
    """``start(path)``: the table at ``path`` (or the ``path`` option), created by the first batch if missing."""
    spark = _session(writer)
    given = _settings(writer).option("path")
    legacy = str(spark.conf.get(_LEGACY_PATH_OPTION, "false")).lower() == "true"
    if path is not None and given is not None and not legacy:
        raise DeltaAnalysisException(
            "There is a 'path' option set and start() is called with a path parameter. Either remove the path option, "
            f"or call start() without the parameter. To ignore this check, set '{_LEGACY_PATH_OPTION}' to 'true'."
        )
    target = path if path is not None else given
    if target is None:
        raise DeltaIllegalArgumentException("'path' is not specified: start(path) or option('path', ...) names the table")
    return _run(writer, _Sink(str(target), _checked(writer, str(target)), spark), start)


def _refuse_non_delta(entry: CatalogEntry) -> None:
    if entry.provider.lower() == "view":
        raise DeltaAnalysisException(f"Streaming into views {entry.name} is not supported.")
    if not entry.is_delta:
        raise DeltaAnalysisException(
            f"The input source(delta) is different from the table {entry.name}'s data source provider({entry.provider})."
        )


@spark_errors
def _start_table(writer: DataStreamWriter, name: str, start: Start) -> StreamingQuery:
    """``toTable(name)``: an existing Delta table, or a new one created first and removed if the start fails."""
    spark = _session(writer)
    entry = lookup(spark, name)
    if entry is not None:
        _refuse_non_delta(entry)
        return _run(writer, _Sink(entry.location, _checked(writer, entry.name), spark), start)
    plan = _checked(writer, name)
    spec = TableSpec(
        "create",
        name=name,
        location=plan.options.path,
        columns=tuple(new_table_schema(_stream(writer).schema).fields),
        partition_columns=tuple(plan.partition_by or ()),
        clustering_columns=tuple(plan.cluster_by or ()),
    )
    created = create_table(spark, spec)
    try:
        return _run(writer, _Sink(created.location, plan, spark), start)
    except BaseException:
        _remove_created(spark, name, created, plan.options)
        raise


def _remove_created(spark: SparkSession, name: str, created: CreateTableResult, options: DeltaOptions) -> None:
    """Take back the table ``toTable`` created for a query that did not start: its catalog
    entry (a managed table's folder goes with it) and, at a given path, the log it wrote."""
    entry = lookup(spark, name)
    unregister(spark, name)
    if created.commit is None or (entry is not None and entry.managed):
        return
    storage = open_table(spark, created.location, options.storage).storage
    log = f"{created.location.rstrip('/')}/_delta_log"
    for _ in storage.delete_many(f.path for f in list(storage.list_tree(log, lambda name: True))):
        pass
    storage.delete_empty_directory(log)


def _start(original: Start) -> Callable[..., StreamingQuery]:
    @functools.wraps(original)
    def start(
        self: DataStreamWriter,
        path: str | None = None,
        format: str | None = None,
        outputMode: str | None = None,
        partitionBy: Any = None,
        queryName: str | None = None,
        **options: Any,
    ) -> StreamingQuery:
        _apply(self, format, outputMode, partitionBy, queryName, options)
        if _settings(self).format != DELTA:
            return original(self, path)
        return _start_path(self, path, original)

    return start


def _to_table(original: Start, start: Start) -> Callable[..., StreamingQuery]:
    @functools.wraps(original)
    def to_table(
        self: DataStreamWriter,
        tableName: str,
        format: str | None = None,
        outputMode: str | None = None,
        partitionBy: Any = None,
        queryName: str | None = None,
        **options: Any,
    ) -> StreamingQuery:
        _apply(self, format, outputMode, partitionBy, queryName, options)
        if _settings(self).format != DELTA or is_temp_view(_session(self), tableName):
            return original(self, tableName)  # Spark refuses a temporary view by name
        return _start_table(self, tableName, start)

    return to_table


def install_stream_writer() -> None:
    """Wrap the classic and Connect ``DataStreamWriter`` (``hooks.install`` calls this once per process)."""
    remembered: dict[str, Callable[..., None]] = {
        "format": _remember_format,
        "option": _remember_option,
        "options": _remember_options,
        "outputMode": _remember_output_mode,
        "partitionBy": _remember_partition_by,
        "clusterBy": _remember_cluster_by,
        "trigger": _remember_trigger,
        "queryName": _remember_query_name,
        "foreach": _remember_foreach,
        "foreachBatch": _remember_foreach_batch,
    }
    for family in families():
        writer: Any = family.stream_writer
        for method, remember in remembered.items():
            setattr(writer, method, _remembering(getattr(writer, method), remember))
        original_start = writer.start
        writer.start = _start(original_start)
        writer.toTable = _to_table(writer.toTable, original_start)

"""``spark.readStream.format("delta")`` and ``readStream.table(name)`` in a Python session.

Spark finds the ``delta`` Python data source by itself; the session's wrappers first check
the options (a bad one fails at ``load``, as in delta-spark, not at ``start``), resolve a
table name to its location, and hand the source the session's storage settings. With
``withEventTimeOrder``, the column of a ``withWatermark`` applied to the stream is handed
to the source too: delta-spark finds it in the query plan, which a Python source cannot see.

The same wrappers go on the classic and the Spark Connect classes (``pyspark_classes.py``).
On Connect the source runs in the server's Python, which must import this sparkdelta
(``server.py``): a stream is refused by name at ``load`` otherwise.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.streaming.readwriter import DataStreamReader

from ...exceptions import DeltaAnalysisException, DeltaIllegalArgumentException, spark_errors
from ..catalog import delta_entry, is_delta_table_name
from ..paths import is_object_store, normalize_location
from ..pyspark_classes import Family, families, reader_session
from ..recorded import record_format, record_option, record_options, recording, settings_of
from ..source import ensure_delta_source
from ..storage import open_table, storage_options
from .options import EVENT_TIME_OPTION, stream_options
from .server import require_server_sparkdelta
from .source import STORAGE_OPTION, stream_schema

DELTA = "delta"


def _record_schema(state: dict[str, Any], schema: Any) -> None:
    state["schema"] = schema


def _delta_stream(reader: DataStreamReader, path: str, options: dict[str, Any]) -> DataFrame:
    """The stream over the Delta table at ``path``: options checked, storage settings attached."""
    spark = reader_session(reader)
    parsed = stream_options(options)
    location = normalize_location(path)
    snapshot = open_table(spark, location, options).snapshot()  # a missing table fails here, naming its path
    require_server_sparkdelta(spark, "readStream.format('delta')")
    given = {k: str(v) for k, v in options.items()}
    if is_object_store(location):
        given[STORAGE_OPTION] = json.dumps(storage_options(spark, location, options))
    ensure_delta_source(spark)
    routed = spark.readStream
    settings_of(routed)["routed"] = True  # straight to Spark, which finds the ``delta`` data source
    # The schema, known here, spares Spark a Python worker to ask the source for it.
    routed = routed.schema(stream_schema(snapshot, parsed.read_change_feed))
    stream = routed.format(DELTA).options(**given).load(location)
    stream.__dict__["_sparkdelta_stream"] = (reader, location, options)
    return stream


def _load(original: Callable[..., DataFrame]) -> Callable[..., DataFrame]:
    @functools.wraps(original)
    @spark_errors
    def load(
        self: DataStreamReader, path: str | None = None, format: str | None = None, schema: Any = None, **options: Any
    ) -> DataFrame:
        state = settings_of(self)
        if (format or state["format"] or "").lower() != DELTA or state.get("routed"):
            return original(self, path, format, schema, **options)
        if schema is not None or state["schema"] is not None:
            raise DeltaAnalysisException(
                "Delta does not support specifying the schema at read time: a Delta table's schema is in its log",
                errorClass="DELTA_UNSUPPORTED_SCHEMA_DURING_READ",
            )
        given = {**state["options"], **options}
        path = path or given.pop("path", None)
        if not isinstance(path, str):
            raise DeltaIllegalArgumentException("readStream.format('delta').load() needs one table path")
        return _delta_stream(self, path, given)

    return load


def _table(original: Callable[..., DataFrame]) -> Callable[..., DataFrame]:
    @functools.wraps(original)
    @spark_errors
    def table(self: DataStreamReader, tableName: str) -> DataFrame:
        spark = reader_session(self)
        if not is_delta_table_name(spark, tableName):
            return original(self, tableName)
        return _delta_stream(self, delta_entry(spark, tableName).location, dict(settings_of(self)["options"]))

    return table


def _with_watermark(original: Callable[..., DataFrame]) -> Callable[..., DataFrame]:
    @functools.wraps(original)
    def with_watermark(self: DataFrame, eventTime: str, delayThreshold: str) -> DataFrame:
        origin = self.__dict__.get("_sparkdelta_stream")
        if origin is not None:
            reader, location, options = origin
            if any(k.lower() == "witheventtimeorder" and str(v).lower() == "true" for k, v in options.items()):
                self = _delta_stream(reader, location, {**options, EVENT_TIME_OPTION: eventTime})
        return original(self, eventTime, delayThreshold)

    return with_watermark


def _install_family(family: Family) -> None:
    reader: Any = family.stream_reader
    dataframe: Any = family.dataframe
    reader.format = recording(reader.format, record_format)
    reader.option = recording(reader.option, record_option)
    reader.options = recording(reader.options, record_options)
    reader.schema = recording(reader.schema, _record_schema)
    reader.load = _load(reader.load)
    reader.table = _table(reader.table)
    dataframe.withWatermark = _with_watermark(dataframe.withWatermark)


def install_stream_reader() -> None:
    """Wrap the classic and Connect ``DataStreamReader`` once per process."""
    if getattr(DataStreamReader, "_sparkdelta_installed", False):
        return
    for family in families():
        _install_family(family)
    DataStreamReader._sparkdelta_installed = True  # type: ignore[attr-defined]

"""Route ``format("delta")`` on Spark's DataFrameReader and DataFrameWriter to sparkdelta.

The wrappers remember the format, options, mode and partition columns set on a reader or
writer (Spark keeps them on the JVM side, out of Python's reach) and, for ``delta``
only, call sparkdelta instead of the JVM data source.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter

DELTA = "delta"


def _state(obj: Any) -> dict[str, Any]:
    if "_sparkdelta" not in obj.__dict__:
        obj.__dict__["_sparkdelta"] = {"format": None, "options": {}, "mode": None, "partition_by": None}
    return obj.__dict__["_sparkdelta"]


def _recording(original: Callable[..., Any], record: Callable[..., None]) -> Callable[..., Any]:
    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        record(_state(self), *args, **kwargs)
        return original(self, *args, **kwargs)

    return wrapper


def _record_format(state: dict[str, Any], source: str) -> None:
    state["format"] = source.lower()


def _record_option(state: dict[str, Any], key: str, value: Any) -> None:
    state["options"][key.lower()] = value


def _record_options(state: dict[str, Any], **options: Any) -> None:
    state["options"].update({k.lower(): v for k, v in options.items()})


def _record_mode(state: dict[str, Any], mode: str | None) -> None:
    state["mode"] = mode


def _record_partition_by(state: dict[str, Any], *cols: Any) -> None:
    names = cols[0] if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else cols
    state["partition_by"] = list(names)


def _reader_load(original: Callable[..., DataFrame]) -> Callable[..., DataFrame]:
    @functools.wraps(original)
    def load(self: DataFrameReader, path: Any = None, format: str | None = None, schema: Any = None, **options: Any) -> DataFrame:
        state = _state(self)
        if (format or state["format"] or "").lower() != DELTA:
            return original(self, path, format, schema, **options)
        from .scan import load as load_delta

        if not isinstance(path, str):
            raise ValueError("format('delta').load() needs one table path")
        merged = {**state["options"], **{k.lower(): v for k, v in options.items()}}
        return load_delta(self._spark, path, merged)

    return load


def _writer_save(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def save(
        self: DataFrameWriter,
        path: str | None = None,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: Any = None,
        **options: Any,
    ) -> None:
        state = _state(self)
        if (format or state["format"] or "").lower() != DELTA:
            return original(self, path, format, mode, partitionBy, **options)
        from .write import write_dataframe

        if path is None:
            raise ValueError("format('delta').save() needs a table path")
        partition_by = partitionBy if partitionBy is not None else state["partition_by"]
        if isinstance(partition_by, str):
            partition_by = [partition_by]
        write_dataframe(
            self._df,
            path,
            mode=(mode or state["mode"] or "errorifexists"),
            partition_by=list(partition_by) if partition_by else None,
            options={**state["options"], **{k.lower(): v for k, v in options.items()}},
        )
        return None

    return save


def install() -> None:
    """Wrap the reader, the writer and ``DataFrame.filter`` once per process."""
    from .scan import filter_with_pruning

    if getattr(DataFrameReader, "_sparkdelta_installed", False):
        return
    for cls in (DataFrameReader, DataFrameWriter):
        cls.format = _recording(cls.format, _record_format)  # type: ignore[method-assign]
        cls.option = _recording(cls.option, _record_option)  # type: ignore[method-assign]
        cls.options = _recording(cls.options, _record_options)  # type: ignore[method-assign]
    DataFrameWriter.mode = _recording(DataFrameWriter.mode, _record_mode)  # type: ignore[method-assign]
    DataFrameWriter.partitionBy = _recording(DataFrameWriter.partitionBy, _record_partition_by)  # type: ignore[method-assign]
    DataFrameReader.load = _reader_load(DataFrameReader.load)  # type: ignore[method-assign]
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    pruning_filter = filter_with_pruning(ClassicDataFrame.filter)
    ClassicDataFrame.filter = pruning_filter  # type: ignore[method-assign]
    ClassicDataFrame.where = pruning_filter  # type: ignore[method-assign]
    DataFrameWriter.save = _writer_save(DataFrameWriter.save)  # type: ignore[method-assign]
    DataFrameReader._sparkdelta_installed = True  # type: ignore[attr-defined]

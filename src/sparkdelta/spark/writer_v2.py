"""Route ``df.writeTo(table)`` (pyspark's ``DataFrameWriterV2``, classic or Connect) to sparkdelta for Delta tables.

Spark keeps a ``DataFrameWriterV2``'s settings on the JVM side, and its session catalog has
no Delta provider to run the statements with (``writer is not implemented``). So, as
``hooks.py`` does for ``DataFrameWriter``, the setters are wrapped to record what they are
told, and the six statements run by sparkdelta (``write_to.py``) when the target is Delta's:
a path table ``delta.`/path```, a statement with ``using("delta")``, or an existing Delta
table. Every other target and provider goes to Spark untouched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..exceptions import spark_errors
from . import write_to
from .pyspark_classes import writer_rows
from .recorded import record_format, record_option, record_options, recording, settings_of


def _record_table(settings: dict[str, Any], *args: Any, **kwargs: Any) -> None:
    """The table name: classic's writer is built with (rows, table), Connect's with (plan, session, table)."""
    settings["table"] = kwargs.get("table") or next(arg for arg in args if isinstance(arg, str))


def _record_option(settings: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:  # pyspark drops an option set to None
        record_option(settings, key, value)


def _record_options(settings: dict[str, Any], **options: Any) -> None:
    record_options(settings, **{k: v for k, v in options.items() if v is not None})


def _record_table_property(settings: dict[str, Any], property: str, value: str) -> None:
    settings.setdefault("properties", {})[property] = value


def _record_partitioned_by(settings: dict[str, Any], col: Any, *cols: Any) -> None:
    settings["partition_by"] = [col, *cols]


def _record_cluster_by(settings: dict[str, Any], col: str, *cols: str) -> None:
    settings["cluster_by"] = [col, *cols]


def _write_to(settings: dict[str, Any]) -> write_to.WriteTo:
    return write_to.WriteTo(
        provider=settings["format"],
        options=settings["options"],
        properties=settings.get("properties"),
        partitioning=settings["partition_by"] or (),
        clustering=settings["cluster_by"] or (),
    )


def _statement(original: Callable[..., None], statement: str, run: Callable[..., None]) -> Callable[..., None]:
    """``original`` (a statement of Spark's writer), run by sparkdelta when its target is Delta's."""

    @functools.wraps(original)
    @spark_errors
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        settings = settings_of(self)
        target = write_to.resolve(self._spark, settings["table"])
        if target is None or not write_to.serves(self._spark, target, statement, settings["format"]):
            return original(self, *args, **kwargs)
        run(writer_rows(self), _write_to(settings), target, *args, **kwargs)
        return None

    return wrapper


def install_writer_v2(cls: type) -> None:
    """Wrap a ``DataFrameWriterV2`` class (``hooks.install`` calls this once per class and process)."""
    recorded: dict[str, Callable[..., None]] = {
        "__init__": _record_table,
        "using": record_format,
        "option": _record_option,
        "options": _record_options,
        "tableProperty": _record_table_property,
        "partitionedBy": _record_partitioned_by,
        "clusterBy": _record_cluster_by,
    }
    for method, record in recorded.items():
        setattr(cls, method, recording(getattr(cls, method), record))
    statements: dict[str, Callable[..., None]] = {
        write_to.CREATE: functools.partial(write_to.create_or_replace, statement=write_to.CREATE),
        write_to.REPLACE: functools.partial(write_to.create_or_replace, statement=write_to.REPLACE),
        write_to.CREATE_OR_REPLACE: functools.partial(write_to.create_or_replace, statement=write_to.CREATE_OR_REPLACE),
        write_to.APPEND: write_to.append,
        write_to.OVERWRITE: write_to.overwrite,
        write_to.OVERWRITE_PARTITIONS: write_to.overwrite_partitions,
    }
    for statement, run in statements.items():
        setattr(cls, statement, _statement(getattr(cls, statement), statement, run))

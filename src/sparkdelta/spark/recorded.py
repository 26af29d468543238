"""What a reader or writer was told, recorded in Python as Spark accepts it.

Spark keeps a ``DataFrameReader``'s, ``DataFrameWriter``'s or ``DataStreamReader``'s
format, options, mode and partitioning on the JVM side, out of Python's reach; the
session's wrappers record them here so that, for ``delta``, sparkdelta can act on them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .options import keyed, option_key


def settings_of(obj: Any) -> dict[str, Any]:
    """The settings recorded on ``obj`` so far."""
    if "_sparkdelta" not in obj.__dict__:
        obj.__dict__["_sparkdelta"] = {
            "format": None,
            "options": {},
            "mode": None,
            "partition_by": None,
            "cluster_by": None,
            "schema": None,
        }
    return obj.__dict__["_sparkdelta"]


def recording(original: Callable[..., Any], record: Callable[..., None]) -> Callable[..., Any]:
    """``original`` (a setter of Spark's) that first records its arguments with ``record``."""

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        record(settings_of(self), *args, **kwargs)
        return original(self, *args, **kwargs)

    return wrapper


def record_format(settings: dict[str, Any], source: str) -> None:
    settings["format"] = source.lower()


def record_option(settings: dict[str, Any], key: str, value: Any) -> None:
    settings["options"][option_key(key)] = value


def record_options(settings: dict[str, Any], **options: Any) -> None:
    settings["options"].update(keyed(options))

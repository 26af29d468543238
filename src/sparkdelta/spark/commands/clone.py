"""CLONE from a Spark session: targets given as a path or a table name, as delta-spark takes them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from ...exceptions import DeltaAnalysisException
from ...kernel import Table
from ...kernel.clone import clone
from ...kernel.command_result import CommandResult
from .. import catalog
from ..paths import normalize_location
from ..time_zones import session_instant


def _is_path(target: str) -> bool:
    return "/" in target or target.startswith("file:")


@dataclass(frozen=True)
class CloneResult(CommandResult):
    """CLONE's commit and metrics, with the clone's ``location`` and, for a named target, its catalog ``name``."""

    location: str
    name: str | None


def clone_table(
    spark: SparkSession,
    source: Table,
    target: str,
    shallow: bool,
    version: int | None = None,
    timestamp: str | datetime | None = None,
    replace: bool = False,
    properties: dict[str, str] | None = None,
) -> CloneResult:
    """Clone ``source`` to ``target`` (a path or a table name)."""
    instant = session_instant(spark, timestamp) if timestamp is not None else None
    if _is_path(target):
        location = Table(normalize_location(target)).root
        done = clone(source, location, shallow, version, instant, replace, properties)
        return CloneResult(done.commit, done.metrics, location, None)
    entry = catalog.lookup(spark, target)
    if entry is not None:
        if not entry.is_delta:
            raise DeltaAnalysisException(f"{entry.name} exists and is not a Delta table (its provider is {entry.provider!r})")
        location = Table(entry.location).root
        done = clone(source, location, shallow, version, instant, replace, properties)
        return CloneResult(done.commit, done.metrics, location, entry.name)
    location = Table(catalog.default_location(spark, target)).root
    schema = StructType.fromJson(source.snapshot(version=version, timestamp=instant).schema.to_json())
    registered = catalog.register(spark, target, location, managed=True, schema=schema)
    try:
        done = clone(source, location, shallow, version, instant, replace, properties)
    except BaseException:
        catalog.unregister(spark, registered.name)
        raise
    return CloneResult(done.commit, done.metrics, location, registered.name)

"""CLONE from a Spark session: targets given as a path or a table name, as delta-spark takes them."""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from ...exceptions import DeltaAnalysisException
from ...kernel import Table
from ...kernel.clone import clone
from .. import catalog
from ..paths import normalize_location
from ..time_zones import session_instant


def _is_path(target: str) -> bool:
    return "/" in target or target.startswith("file:")


def clone_table(
    spark: SparkSession,
    source: Table,
    target: str,
    shallow: bool,
    version: int | None = None,
    timestamp: str | datetime | None = None,
    replace: bool = False,
    properties: dict[str, str] | None = None,
) -> tuple[str, str | None]:
    """Clone ``source`` to ``target``; the clone's location and, for a named target, its catalog name."""
    instant = session_instant(spark, timestamp) if timestamp is not None else None
    if _is_path(target):
        location = Table(normalize_location(target)).root
        clone(source, location, shallow, version, instant, replace, properties)
        return location, None
    entry = catalog.lookup(spark, target)
    if entry is not None:
        if not entry.is_delta:
            raise DeltaAnalysisException(f"{entry.name} exists and is not a Delta table (its provider is {entry.provider!r})")
        location = Table(entry.location).root
        clone(source, location, shallow, version, instant, replace, properties)
        return location, entry.name
    location = Table(catalog.default_location(spark, target)).root
    schema = StructType.fromJson(source.snapshot(version=version, timestamp=instant).schema.to_json())
    registered = catalog.register(spark, target, location, managed=True, schema=schema)
    try:
        clone(source, location, shallow, version, instant, replace, properties)
    except BaseException:
        catalog.unregister(spark, registered.name)
        raise
    return location, registered.name

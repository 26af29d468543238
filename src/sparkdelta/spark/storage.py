"""Tables opened from a Spark session: the kernel reaches storage with Spark's own settings.

A user configures S3, Azure or GCS access once, for Spark (``spark.hadoop.fs.s3a.*``,
``fs.azure.account.key.<account>...``, set when the session is built or later with
``spark.conf.set``), and sparkdelta's kernel reads and commits the log with the same
credentials and endpoint. Options given for one table (``DeltaTable.forPath(spark, path,
hadoopConf)``, reader and writer options ``fs.s3a.*``) win over the session's. What
neither sets comes from the environment (``AWS_*``...), as for the kernel alone.

A Spark Connect server redacts secrets (``spark.redaction.regex``: access keys, secret
keys, tokens) from the settings it reports, so a Connect session's own storage settings
are also remembered here, in the client, as they are set (``remember_settings``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import SparkSession

from ..kernel.object_store import storage_options_from_hadoop
from ..kernel.table import Table
from .paths import is_object_store, normalize_location
from .pyspark_classes import is_connect

_HADOOP_PREFIXES = (
    "fs.",
    "spark.hadoop.fs.",
    "google.cloud.",
    "spark.hadoop.google.cloud.",
    "spark.delta.logstore.",  # delta-spark's multi-cluster S3 setup (DynamoDB commits)
    "spark.io.delta.storage.",
    "io.delta.storage.",
)


_SET_HERE = "_sparkdelta_storage_settings"


_REDACTED = "*********(redacted)"  # Spark's stand-in for a redacted value


def _set_here(client: Any) -> dict[str, str]:
    """The storage settings this process set on the Connect session of ``client``."""
    settings: dict[str, str] = client.__dict__.setdefault(_SET_HERE, {})
    return settings


def _remember(client: Any, key: str, value: Any) -> None:
    if key.lower().startswith(_HADOOP_PREFIXES):
        _set_here(client)[key] = str(value).lower() if isinstance(value, bool) else str(value)


def remember_settings(conf_class: Any) -> None:
    """Wrap a Spark Connect ``RuntimeConf`` class so that the storage settings set through
    it (``spark.conf.set``, and the builder's ``config``, applied by ``_set_all``) are kept
    in the client too, where the kernel finds them however the server redacts them."""

    def setting(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def set_(self: Any, key: str, value: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(self, key, value, *args, **kwargs)
            _remember(self._client, key, value)
            return result

        return set_

    def setting_all(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def set_all(self: Any, configs: Mapping[str, Any], *args: Any, **kwargs: Any) -> Any:
            result = original(self, configs, *args, **kwargs)
            for key, value in configs.items():
                _remember(self._client, key, value)
            return result

        return set_all

    def unsetting(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def unset(self: Any, key: str, *args: Any, **kwargs: Any) -> Any:
            _set_here(self._client).pop(key, None)
            return original(self, key, *args, **kwargs)

        return unset

    conf_class.set = setting(conf_class.set)
    conf_class._set_all = setting_all(conf_class._set_all)
    conf_class.unset = unsetting(conf_class.unset)


def _session_settings(spark: SparkSession) -> dict[str, str]:
    """The session's storage settings: those it reports, and on a Connect session those this
    process set that it does not report (redacted)."""
    reported = {k: v for k, v in spark.conf.getAll.items() if k.lower().startswith(_HADOOP_PREFIXES) and v != _REDACTED}
    if not is_connect(spark):
        return reported
    return {**_set_here(spark.client), **reported}


def hadoop_settings(options: Mapping[str, object] | None) -> dict[str, str]:
    """The storage settings among reader/writer or ``hadoopConf`` options (any case: reader
    options arrive lowercased)."""
    return {k: str(v) for k, v in (options or {}).items() if k.lower().startswith(_HADOOP_PREFIXES)}


def _engine_options(options: Mapping[str, object] | None) -> dict[str, str]:
    """The Hadoop ``fs.*`` options Spark's own reads and writes of the table take."""
    settings = {k.removeprefix("spark.hadoop."): v for k, v in hadoop_settings(options).items()}
    return {k: v for k, v in settings.items() if k.startswith("fs.")}


def storage_options(spark: SparkSession, location: str, options: Mapping[str, object] | None = None) -> dict[str, str]:
    """Kernel storage options for an object-store ``location``: the session's Hadoop
    settings, overridden by ``options`` (Hadoop keys), overridden by delta-rs style keys."""
    session = _session_settings(spark)
    given = dict(options or {})
    hadoop = {**session, **hadoop_settings(given)}
    explicit = {k: str(v) for k, v in given.items() if k.lower().startswith(("aws_", "azure_", "google_"))}
    return {**storage_options_from_hadoop(hadoop, location), **explicit}


def open_table(spark: SparkSession, location: str, options: Mapping[str, object] | None = None) -> Table:
    """The table at ``location`` (local path, ``file:`` URI or object-store URL), its
    storage configured from the session and ``options``."""
    location = normalize_location(location)
    if not is_object_store(location):
        return Table(location)
    table = Table(location, storage_options=storage_options(spark, location, options))
    table.storage.engine_options = _engine_options(options)
    return table

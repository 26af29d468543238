"""Where everything lives: the landing folder and the Delta tables, all under one root.

One root makes a warehouse easy to move, wipe or point a cluster at (driver and executors
must share it), and the layout is the medallion one: ``bronze/``, ``silver/``, ``gold/``.
The root is a local directory or an object-store URL (``s3a://bucket/lake``); Spark
reaches it through its Hadoop file systems, and sparkdelta with the session's settings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from pyspark.sql import SparkSession

from ..kernel import Storage, Table
from ..tables import kernel_table

GOLD_TABLE_NAMES = ("daily_vendor", "daily_zone", "daily_payment", "tips_by_hour")


def retention_property(hours: float) -> str:
    """``delta.deletedFileRetentionDuration`` for the tables the pipeline creates: what VACUUM keeps."""
    return f"interval {hours:g} hours"


@dataclass(frozen=True, order=True)
class Location:
    """A file or folder of the warehouse: a local path or an object-store URL."""

    uri: str

    @classmethod
    def of(cls, place: Location | str | os.PathLike[str]) -> Location:
        """A location from the user's spelling: URLs as given, local paths made absolute."""
        if isinstance(place, Location):
            return place
        text = os.fspath(place)
        parsed = urlparse(text)
        if parsed.scheme == "file":
            return cls(os.path.abspath(unquote(parsed.path)))
        return cls(text.rstrip("/") if "://" in text else os.path.abspath(text))

    def __truediv__(self, name: str) -> Location:
        return Location(f"{self.uri}/{name}")

    def __str__(self) -> str:
        return self.uri

    @property
    def spark_path(self) -> str:
        """The location as Spark's file sources take it (``s3a://`` for S3)."""
        scheme, url, rest = self.uri.partition("://")
        if not url:
            return f"file://{self.uri}"
        return f"s3a://{rest}" if scheme.lower() == "s3" else self.uri

    @property
    def name(self) -> str:
        return self.uri.rstrip("/").rpartition("/")[2]

    @property
    def stem(self) -> str:
        return self.name.rpartition(".")[0] or self.name


def table_at(location: Location) -> Table:
    """The Delta log at ``location``, reached with the active session's storage settings."""
    return kernel_table(SparkSession.active(), str(location))


def storage_at(location: Location) -> tuple[Storage, str]:
    """The storage holding ``location``, and its spelling there."""
    table = table_at(location)
    return table.storage, table.root


@dataclass(frozen=True)
class Warehouse:
    root: Location

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Location.of(self.root))  # a local path or URL, as callers have it

    @property
    def landing(self) -> Location:
        return self.root / "landing"

    @property
    def bronze(self) -> Location:
        return self.root / "bronze" / "trips"

    @property
    def silver(self) -> Location:
        return self.root / "silver" / "trips"

    @property
    def quarantine(self) -> Location:
        return self.root / "silver" / "quarantine"

    def gold(self, name: str) -> Location:
        return self.root / "gold" / name

    def checkpoint(self, layer: str) -> Location:
        """Where the streaming query of ``layer`` (``bronze``, ``silver``, ``gold``) keeps its checkpoint."""
        return self.root / "_checkpoints" / layer

    def has_checkpoint(self, layer: str) -> bool:
        """Whether ``layer``'s query has started here (Spark writes the checkpoint's ``metadata`` first)."""
        storage, path = storage_at(self.checkpoint(layer) / "metadata")
        return storage.exists(path)

    def tables(self) -> dict[str, Location]:
        """Every Delta table of the pipeline by display name, upstream first."""
        return {
            "bronze.trips": self.bronze,
            "silver.trips": self.silver,
            "silver.quarantine": self.quarantine,
            **{f"gold.{name}": self.gold(name) for name in GOLD_TABLE_NAMES},
        }

    def landing_files(self) -> list[Location]:
        """The CSV drops in landing order (by name); hidden and in-progress files (``.``, ``_``) are skipped."""
        return [path for path, _ in self.landing_listing()]

    def landing_listing(self) -> list[tuple[Location, int]]:
        """``landing_files`` with each file's size in bytes."""
        storage, landing = storage_at(self.landing)
        try:
            found = list(storage.list_tree(landing, lambda name: False))
        except FileNotFoundError:
            return []
        drops = [(self.landing / f.name, f.size) for f in found if f.name.endswith(".csv") and not f.name.startswith(("_", "."))]
        return sorted(drops)

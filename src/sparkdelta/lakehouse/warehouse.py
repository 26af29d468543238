"""Where everything lives: the landing folder and the Delta tables, all under one directory.

One root makes a warehouse easy to move, wipe or point a cluster at (driver and executors
must share it), and the layout is the medallion one: ``bronze/``, ``silver/``, ``gold/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

GOLD_TABLE_NAMES = ("daily_vendor", "daily_zone", "daily_payment", "tips_by_hour")


def retention_property(hours: float) -> str:
    """``delta.deletedFileRetentionDuration`` for the tables the pipeline creates: what VACUUM keeps."""
    return f"interval {hours:g} hours"


@dataclass(frozen=True)
class Warehouse:
    root: Path

    @property
    def landing(self) -> Path:
        return self.root / "landing"

    @property
    def bronze(self) -> Path:
        return self.root / "bronze" / "trips"

    @property
    def silver(self) -> Path:
        return self.root / "silver" / "trips"

    @property
    def quarantine(self) -> Path:
        return self.root / "silver" / "quarantine"

    def gold(self, name: str) -> Path:
        return self.root / "gold" / name

    def tables(self) -> dict[str, Path]:
        """Every Delta table of the pipeline by display name, upstream first."""
        return {
            "bronze.trips": self.bronze,
            "silver.trips": self.silver,
            "silver.quarantine": self.quarantine,
            **{f"gold.{name}": self.gold(name) for name in GOLD_TABLE_NAMES},
        }

    def landing_files(self) -> list[Path]:
        """The CSV drops in landing order (by name); hidden and in-progress files (``.``, ``_``) are skipped."""
        if not self.landing.is_dir():
            return []
        return sorted(p for p in self.landing.glob("*.csv") if p.is_file() and not p.name.startswith(("_", ".")))

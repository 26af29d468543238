"""What a run did, layer by layer: rows in and out, quarantine reasons, versions, time.

One dataclass, printed as rich tables for people and as JSON for scripts (``--json``).
The counts reconcile: silver's rows in = quarantined + duplicates + superseded +
unchanged + inserted + updated. In stream mode (``mode`` ``stream`` or ``continuous``)
bronze's batches are its query's micro-batches, and ``micro_batches`` gives each
query's first and last micro-batch that committed in this run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from .bronze import BronzeResult
from .gold import GoldResult
from .maintenance import TableMaintenance
from .silver import SilverResult


@dataclass
class RunSummary:
    warehouse: str
    mode: str = "batch"  # or "stream" (availableNow), "continuous"
    generated: list[str] = field(default_factory=list)  # landing files this run generated
    bronze: BronzeResult = field(default_factory=BronzeResult)
    silver: SilverResult = field(default_factory=SilverResult)
    gold: GoldResult = field(default_factory=GoldResult)
    maintenance: list[TableMaintenance] = field(default_factory=list)
    versions: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)  # before, after
    seconds: dict[str, float] = field(default_factory=dict)  # per stage
    micro_batches: dict[str, tuple[int, int]] = field(default_factory=dict)  # per query: first, last
    restarts: dict[str, int] = field(default_factory=dict)  # per query: starts again after its input gained columns

    def saw_batch(self, layer: str, batch_id: int) -> None:
        """Record that ``layer``'s query committed micro-batch ``batch_id``."""
        first, last = self.micro_batches.get(layer, (batch_id, batch_id))
        self.micro_batches[layer] = (min(first, batch_id), max(last, batch_id))

    @property
    def changed(self) -> bool:
        return any(before != after for before, after in self.versions.values())

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["silver"]["corrections"] = self.silver.corrections
        data["changed"] = self.changed
        return data

    def render(self, console: Console) -> None:
        console.print(self._layers())
        if any(self.silver.quarantined.values()):
            console.print(self._quarantine())
        console.print(self._tables())
        total = sum(self.seconds.values())
        verdict = "tables changed" if self.changed else "nothing new: no table changed"
        console.print(f"[bold]{verdict}[/bold]; {total:.1f} s in all, warehouse {self.warehouse}")

    def _layers(self) -> RichTable:
        table = RichTable(title="Pipeline run")
        for name, justify in [("stage", "left"), ("in", "right"), ("out", "right"), ("detail", "left"), ("seconds", "right")]:
            table.add_column(name, justify=justify)  # type: ignore[arg-type]
        s, b, g = self.silver, self.bronze, self.gold
        if "generate" in self.seconds:
            table.add_row("generate", "", _files(len(self.generated)), "raw trips into landing/", self._time("generate"))
        bronze = _batches(b.batches) + self._restarts("bronze")
        table.add_row("bronze", _files(len(b.files)), f"{b.rows:,} rows", bronze, self._time("bronze"))
        detail = "\n".join(
            [
                f"{s.inserted:,} inserted, {s.updated:,} corrections applied",
                f"{sum(s.quarantined.values()):,} quarantined, {s.duplicates:,} duplicates",
                f"{s.superseded:,} superseded, {s.unchanged:,} unchanged",
            ]
        )
        detail += self._micro_batches("silver")
        table.add_row("silver", f"{s.rows_in:,} rows", f"{s.inserted + s.updated:,} rows", detail, self._time("silver"))
        keys = "\n".join(f"{name}: {n:,}" for name, n in g.keys.items()) or "up to date"
        versions = f"silver v{g.silver_versions[0]}..{g.silver_versions[1]}\n" if g.silver_versions else ""
        keys += self._micro_batches("gold")
        table.add_row("gold", f"{g.change_rows:,} changes", f"{sum(g.keys.values()):,} keys", versions + keys, self._time("gold"))
        if "streaming" in self.seconds:
            table.add_row("streaming", "", "", "bronze, silver and gold side by side", self._time("streaming"))
        done = [m for m in self.maintenance if m.optimize or m.vacuumed]
        detail = "\n".join(_maintenance(m) for m in done) or "nothing to do"
        if self.mode == "continuous":
            detail = "left to the next run"
        table.add_row("maintenance", "", "", detail, self._time("maintenance"))
        return table

    def _quarantine(self) -> RichTable:
        table = RichTable(title="Quarantined rows by reason")
        table.add_column("reason")
        table.add_column("rows", justify="right")
        for reason, count in self.silver.quarantined.items():
            table.add_row(reason, f"{count:,}")
        return table

    def _tables(self) -> RichTable:
        table = RichTable(title="Tables")
        table.add_column("table")
        table.add_column("version", justify="right")
        for name, (before, after) in self.versions.items():
            shown = "-" if after is None else str(after)
            if before != after:
                shown = f"{'-' if before is None else before} -> {shown}"
            table.add_row(name, shown)
        return table

    def _micro_batches(self, layer: str) -> str:
        found = self.micro_batches.get(layer)
        return (f"\nmicro-batches {found[0]}..{found[1]}" if found else "") + self._restarts(layer)

    def _restarts(self, layer: str) -> str:
        n = self.restarts.get(layer, 0)
        return f"\nrestarted {n}x: new columns" if n else ""

    def _time(self, stage: str) -> str:
        return f"{self.seconds[stage]:.1f}" if stage in self.seconds else ""


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def _batches(batches: tuple[int, int] | None) -> str:
    return f"batches {batches[0]}..{batches[1]}" if batches else "no new files"


def _maintenance(m: TableMaintenance) -> str:
    parts = []
    if m.optimize:
        parts.append(f"OPTIMIZE {m.optimize}: {m.files_removed} -> {m.files_added} files")
    if m.vacuumed:
        parts.append(f"VACUUM deleted {m.vacuumed} files")
    return f"{m.table}: {', '.join(parts)}"

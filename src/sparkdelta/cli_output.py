"""How the ``sparkdelta`` CLI prints what a command found, for people (``--json`` is for programs).

Sizes are in binary units (``1.2 MiB``), metrics and parameters are ``name=value`` lists,
and no Python or JSON object shows through: engines nest some values, as delta-rs's
OPTIMIZE writes its file statistics as a JSON object in a string, and these are spelled
out too. A value is a size when its name says so (``...Bytes``, ``...Size``, ``sizeOf...``,
``num_added_bytes``): delta-spark, delta-rs and sparkdelta all name their byte counts so.

rich is imported by the commands that print a table, not by the others.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import click

_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
_FILE_STATS = frozenset({"totalFiles", "totalSize"})
_UNWRAPPED = 10_000
"""The width tables are laid out in when stdout is no terminal: one line per row, for grep and friends."""
_PARAMETERS_WIDTH = 48
"""``history`` aligns the metrics after parameters up to this long; longer ones push their line's metrics on."""


def human_size(size: float) -> str:
    """``size`` bytes in binary units with one decimal (``1.2 MiB``); whole bytes below 1 KiB (``486 B``)."""
    if abs(round(size)) < 1024:
        return f"{round(size)} B"
    value = float(size)
    for unit in _UNITS:
        value /= 1024
        if abs(round(value, 1)) < 1024 or unit == _UNITS[-1]:
            break
    return f"{value:.1f} {unit}"


def is_size(name: str) -> bool:
    """Whether the metric or parameter ``name`` counts bytes."""
    lowered = name.lower()
    return "bytes" in lowered or "size" in lowered


def _integer(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _decoded(value: object) -> object:
    """A JSON object or array held in a string, decoded (delta-rs's OPTIMIZE file stats,
    delta-spark's MERGE predicates); anything else as it is."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def file_stats_text(stats: Mapping[str, Any]) -> str:
    """OPTIMIZE's ``filesAdded`` / ``filesRemoved``: ``3 files totalling 1.4 KiB (min 486 B, avg 486 B, max 487 B)``
    (no comma outside the parentheses: the text goes into ``name=value, ...`` lists)."""
    count = _integer(stats.get("totalFiles")) or 0
    text = f"{count} file{'' if count == 1 else 's'}"
    if not count:
        return text
    text += f" totalling {human_size(float(stats.get('totalSize') or 0))}"
    spread = [f"{key} {human_size(float(stats[key]))}" for key in ("min", "avg", "max") if stats.get(key) is not None]
    return f"{text} ({', '.join(spread)})" if count > 1 and spread else text


def value_text(name: str, value: object) -> str:
    """One metric's or parameter's value, for people: sizes in binary units, objects spelled out."""
    value = _decoded(value)
    if isinstance(value, Mapping):
        return file_stats_text(value) if _FILE_STATS <= value.keys() else pairs_text(value, nested=True)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return "[" + ", ".join(value_text(name, item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    number = _integer(value)
    if number is not None and is_size(name):
        return human_size(number)
    return str(value)


def pairs_text(values: Mapping[str, Any], *, nested: bool = False) -> str:
    """``name=value, ...`` (in parentheses when ``nested`` in another value)."""
    text = ", ".join(f"{name}={value_text(name, value)}" for name, value in values.items())
    return f"({text})" if nested else text


def print_metrics(metrics: Mapping[str, Any]) -> None:
    """A command's metrics as a two-column table: the metric's name, its value for people."""
    from rich.table import Table
    from rich.text import Text

    table = Table("metric", "value")
    for name, value in metrics.items():
        table.add_row(Text(name), Text(value_text(name, value)))  # Text: no rich markup in values
    print_table(table)


def print_table(table: Any) -> None:
    """A rich table on stdout: fitted to a terminal's width, unwrapped when piped."""
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=_UNWRAPPED)
    with console.capture() as captured:
        console.print(table)
    click.echo(captured.get(), nl=False)


def history_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """``history``'s table, one line per commit (grep finds a version's whole entry): version,
    timestamp, operation, then its parameters and metrics as ``name=value`` lists.

    Plain text, not a rich table: a history may hold thousands of commits, and rich takes
    about 0.3 ms a row to lay one out (a second per 3,000 commits, more than reading them).
    """
    cells = [
        (
            str(row["version"]),
            str(row["timestamp"]),
            str(row.get("operation", "")),
            pairs_text(row.get("operationParameters") or {}) or "-",
            pairs_text(row.get("operationMetrics") or {}) or "-",
        )
        for row in rows
    ]
    header = ("version", "timestamp", "operation", "parameters", "metrics")
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(header[:3])]
    widths.append(min(_PARAMETERS_WIDTH, max([len(header[3]), *(len(c[3]) for c in cells)])))
    lines = []
    for version, timestamp, operation, parameters, metrics in [header, *cells]:
        line = f"{version:>{widths[0]}}  {timestamp:<{widths[1]}}  {operation:<{widths[2]}}  {parameters:<{widths[3]}}  {metrics}"
        lines.append(line.rstrip())
    return lines

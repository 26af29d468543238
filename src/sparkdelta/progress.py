"""Progress on driver-side loops (Spark jobs show Spark's own progress bar)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.progress import track

T = TypeVar("T")


def progress(items: Iterable[T], total: int, description: str) -> Iterator[T]:
    """``items`` with a progress bar on an interactive terminal, silently elsewhere (logs, CI)."""
    yield from track(items, total=total, description=description, transient=True, disable=not sys.stderr.isatty())

"""Spark's physical plan of a DataFrame as text, from classic and Spark Connect sessions alike."""

from __future__ import annotations

import contextlib
import io
from typing import Any


def physical_plan(frame: Any) -> str:
    """What ``frame.explain()`` prints: before the frame runs, the initial plan (adaptive
    execution adds the final one). Both kinds of session print it; neither returns it."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        frame.explain()
    return printed.getvalue()

"""Independent oracles for the tests: the conformance tables and delta-rs (``deltalake``)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

import deltalake
import pytest

CONFORMANCE = Path(__file__).resolve().parents[2] / "shared" / "conformance"


def conformance_root() -> Path:
    if not (CONFORMANCE / "expected" / "manifest.json").exists():
        pytest.skip(f"conformance tables not found at {CONFORMANCE}")
    return CONFORMANCE


def load_manifest() -> dict:
    """delta-rs's answers for every conformance table (see shared/conformance/README.md)."""
    path = CONFORMANCE / "expected" / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else {}


def delta_rs_files(path: str | Path, version: int | None = None) -> list[str]:
    """The active file paths delta-rs sees, URL-decoded and sorted."""
    table = deltalake.DeltaTable(str(path), version=version)
    return sorted(unquote(p) for p in table.get_add_actions(flatten=True).column("path").to_pylist())

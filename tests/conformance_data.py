"""Where the conformance tables live, and their manifest of delta-rs answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CONFORMANCE = Path(__file__).resolve().parents[2] / "shared" / "conformance"


def conformance_root() -> Path:
    if not (CONFORMANCE / "expected" / "manifest.json").exists():
        pytest.skip(f"conformance tables not found at {CONFORMANCE}")
    return CONFORMANCE


def load_manifest() -> dict:
    path = CONFORMANCE / "expected" / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else {}

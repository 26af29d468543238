"""Another writer's commit, landed just before ours: the concurrency tests' race, made deterministic."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sparkdelta.kernel.transaction import Transaction


def interloper(monkeypatch: pytest.MonkeyPatch, action: Callable[[], None]) -> None:
    """Run ``action`` (another writer's commit) once, just before the next commit lands."""
    original = Transaction.commit
    pending = [action]

    def commit(self: Transaction, *args: Any, **kwargs: Any) -> Any:
        if pending:
            pending.pop()()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Transaction, "commit", commit)

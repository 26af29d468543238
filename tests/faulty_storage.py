"""Fault injection at the storage interface: fail or interrupt one chosen call.

``inject(monkeypatch, fault)`` makes every ``Table`` opened afterwards use a
``FaultyStorage``, which runs the real local-disk call and fires ``fault`` at the first
(or ``nth``) call of ``fault.method`` whose path matches ``fault.path``:

- ``before``: raise without doing anything (a request that never reached the store);
- ``after``: do the call, then raise (a store that applied the request but whose answer
  was lost, or a Ctrl-C right after it);
- ``store_down``: like ``after`` when ``applied``, like ``before`` otherwise, and every
  later read of that path raises too, so the writer cannot learn the outcome.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from sparkdelta.kernel import table as table_module
from sparkdelta.kernel.locations import resolve_table_root
from sparkdelta.kernel.storage import LocalStorage, Storage

COMMIT = r"_delta_log/\d{20}\.json$"
CHECKPOINT = r"_delta_log/\d{20}\.checkpoint\.parquet$"
LAST_CHECKPOINT = r"_delta_log/_last_checkpoint$"
LOG_FILE = r"_delta_log/\d{20}\."


@dataclass
class Fault:
    """One injected failure: which call, when relative to the real call, and what is raised."""

    method: str
    path: str
    when: str
    error: Callable[[], BaseException] = lambda: OSError("injected storage failure")
    nth: int = 1
    applied: bool = True
    seen: int = 0
    fired: bool = False
    unreadable: set[str] = field(default_factory=set)

    def matches(self, method: str, path: str) -> bool:
        if self.fired or method != self.method or not re.search(self.path, path):
            return False
        self.seen += 1
        return self.seen == self.nth


class FaultyStorage(LocalStorage):
    """Local disk that fires one ``Fault``."""

    def __init__(self, fault: Fault) -> None:
        self.fault = fault

    def __reduce__(self) -> tuple[type, tuple[()]]:
        """Executors (deletion vectors) get plain local disk: faults hit the driver's log calls."""
        return LocalStorage, ()

    def _call(self, method: str, path: str, real: Callable[[], object]) -> object:
        fault = self.fault
        if not fault.matches(method, path):
            return real()
        fault.fired = True
        if fault.when == "after" or (fault.when == "store_down" and fault.applied):
            real()
        if fault.when == "store_down":
            fault.unreadable.add(path)
        raise fault.error()

    def read(self, path: str) -> bytes:
        if path in self.fault.unreadable:
            raise OSError(f"injected: the store is down, cannot read {path}")
        return super().read(path)

    def put_if_absent(self, path: str, data: bytes) -> None:
        self._call("put_if_absent", path, lambda: super(FaultyStorage, self).put_if_absent(path, data))

    def write(self, path: str, data: bytes) -> None:
        self._call("write", path, lambda: super(FaultyStorage, self).write(path, data))

    def delete(self, path: str) -> None:
        self._call("delete", path, lambda: super(FaultyStorage, self).delete(path))


def inject(monkeypatch: pytest.MonkeyPatch, fault: Fault) -> None:
    """Every ``Table`` created from now on (kernel, DeltaTable, format("delta")) stores through ``fault``."""

    def resolve(location: str, storage_options: object = None) -> tuple[Storage, str]:
        _, root = resolve_table_root(location)
        return FaultyStorage(fault), root

    monkeypatch.setattr(table_module, "resolve_table_root", resolve)

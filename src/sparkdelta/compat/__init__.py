"""delta-spark's ``delta`` modules, served by sparkdelta, so delta-spark code runs unchanged.

``register()`` adds an import finder that answers ``import delta`` and ``delta.*`` with the
modules under ``sparkdelta/compat/delta/`` (``DeltaTable``, ``configure_spark_with_delta_pip``,
``delta.exceptions``). The finder sits at the end of ``sys.meta_path``: Python asks it only
after the ordinary finders found nothing, so an installed delta-spark is never shadowed.

``sparkdelta compat enable`` writes a ``.pth`` file that calls ``register()`` at interpreter
start, for code whose imports cannot change; ``sparkdelta compat disable`` removes it.
Registering imports nothing: pyspark loads only when ``delta`` is imported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

__all__ = ["DeltaModuleFinder", "delta_spark_installed", "register"]

PACKAGE = "delta"
SHIM = f"{__name__}.delta"


class _AliasLoader(importlib.abc.Loader):
    """Hands out sparkdelta's module under delta-spark's name (one module object, not a copy)."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """The module ran when ``create_module`` imported it under its own name."""


class DeltaModuleFinder(importlib.abc.MetaPathFinder):
    """Finds ``delta`` and ``delta.<name>`` among sparkdelta's compatibility modules."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != PACKAGE and not fullname.startswith(PACKAGE + "."):
            return None
        target_name = SHIM + fullname[len(PACKAGE) :]
        if importlib.util.find_spec(target_name) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(target_name), is_package=fullname == PACKAGE)


def delta_spark_installed() -> bool:
    """Whether a real ``delta`` package (delta-spark) is importable without sparkdelta's finder."""
    others = [finder for finder in sys.meta_path if not isinstance(finder, DeltaModuleFinder)]
    for finder in others:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is not None and find_spec(PACKAGE, None) is not None:
            return True
    return False


def register() -> bool:
    """Serve ``delta`` from sparkdelta unless delta-spark is installed; whether sparkdelta serves it."""
    if any(isinstance(finder, DeltaModuleFinder) for finder in sys.meta_path):
        return True
    if delta_spark_installed():
        return False
    sys.meta_path.append(DeltaModuleFinder())
    return True

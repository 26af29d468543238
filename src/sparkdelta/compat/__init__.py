"""delta-spark's ``delta`` modules, served by sparkdelta, so delta-spark code runs unchanged.

``register()`` adds an import finder that answers ``import delta`` and ``delta.*`` with the
modules under ``sparkdelta/compat/delta/`` (``DeltaTable``, ``configure_spark_with_delta_pip``,
``delta.exceptions``), unless a real ``delta`` package is on the path: an installed
delta-spark is never shadowed.

Code written for delta-spark does not always import ``delta``: a script may only build its
session with delta-spark's settings and call ``format("delta")`` or Delta SQL. So
``register()`` also installs sparkdelta's ``format("delta")`` wrappers when the first
Spark session is created (at once if pyspark is already loaded).

``python -m sparkdelta.compat enable`` writes a ``.pth`` file that calls ``register()`` at
interpreter start, for code that cannot change at all; ``disable`` removes it. Registering
imports nothing itself: pyspark and sparkdelta's engine load when the program imports them.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

__all__ = ["DeltaModuleFinder", "delta_spark_installed", "disable", "enable", "pth_path", "register"]

PACKAGE = "delta"
SHIM = f"{__name__}.delta"
PYSPARK_SESSION = "pyspark.sql.session"
_SHIM_DIR = Path(__file__).parent / PACKAGE
PTH_FILE = "sparkdelta-delta-compat.pth"
PTH_LINE = "import sparkdelta.compat; sparkdelta.compat.register()\n"


class _AliasLoader(importlib.abc.Loader):
    """Hands out sparkdelta's module under delta-spark's name (one module object, not a copy)."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """The module ran when ``create_module`` imported it under its own name."""


class _InstallOnFirstSession(importlib.abc.Loader):
    """Runs ``pyspark.sql.session`` as its own loader would, then has the first session created
    install sparkdelta's wrappers. Not at import: pyspark may be imported by sparkdelta itself,
    half-way through its own modules' imports."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        session_class = module.SparkSession
        original_init = session_class.__init__

        def init(session: object, *args: object, **kwargs: object) -> None:
            original_init(session, *args, **kwargs)
            if session_class.__init__ is init:
                session_class.__init__ = original_init
            _install_hooks()  # its session check sees this new session, now the active one

        session_class.__init__ = init


def _install_hooks() -> None:
    from sparkdelta.spark.hooks import install

    install()


class DeltaModuleFinder(importlib.abc.MetaPathFinder):
    """Finds ``delta`` and ``delta.<name>`` among sparkdelta's compatibility modules, and has
    pyspark's first session install sparkdelta's wrappers."""

    def __init__(self) -> None:
        self._finding_pyspark = False

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname == PYSPARK_SESSION:
            return self._pyspark_session_spec()
        if fullname != PACKAGE and not fullname.startswith(PACKAGE + "."):
            return None
        if fullname == PACKAGE and importlib.machinery.PathFinder.find_spec(PACKAGE) is not None:
            return None  # a real ``delta`` (delta-spark, or the user's own) is never shadowed
        if not _is_shim_module(fullname):
            return None  # not one of sparkdelta's: whatever else is on ``delta.__path__`` loads as itself
        target_name = SHIM + fullname[len(PACKAGE) :]
        return importlib.util.spec_from_loader(fullname, _AliasLoader(target_name), is_package=fullname == PACKAGE)

    def _pyspark_session_spec(self) -> importlib.machinery.ModuleSpec | None:
        """``pyspark.sql.session``'s own spec, with a loader that has its first session install the wrappers."""
        if self._finding_pyspark:
            return None
        self._finding_pyspark = True
        try:
            spec = importlib.util.find_spec(PYSPARK_SESSION)
        finally:
            self._finding_pyspark = False
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _InstallOnFirstSession(spec.loader)
        return spec


def _is_shim_module(fullname: str) -> bool:
    """Whether ``sparkdelta/compat/`` holds ``fullname`` (``delta`` or ``delta.x.y``), found without importing."""
    relative = _SHIM_DIR.joinpath(*fullname.split(".")[1:])
    return fullname == PACKAGE or relative.with_suffix(".py").is_file() or (relative / "__init__.py").is_file()


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
    # Python workers must import sparkdelta: this interpreter, unless the user chose one.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.meta_path.insert(0, DeltaModuleFinder())  # first, to see pyspark's session module load
    if PYSPARK_SESSION in sys.modules:
        _install_hooks()
    return True


def pth_path(site_packages: Path | None) -> Path:
    return (site_packages or Path(sysconfig.get_paths()["purelib"])) / PTH_FILE


def enable(site_packages: Path | None = None) -> Path:
    """Have every interpreter of this environment (or of ``site_packages``) call ``register()`` at start."""
    pth = pth_path(site_packages)
    pth.write_text(PTH_LINE)
    return pth


def disable(site_packages: Path | None = None) -> Path:
    """Undo ``enable``: the ``.pth`` file is removed."""
    pth = pth_path(site_packages)
    pth.unlink(missing_ok=True)
    return pth

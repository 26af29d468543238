"""delta-spark's top-level ``delta`` module: ``DeltaTable``, ``configure_spark_with_delta_pip``, ``__version__``."""

from __future__ import annotations

from sparkdelta.compat.delta import exceptions  # noqa: F401  (delta-spark imports it with the package)
from sparkdelta.compat.delta.pip_utils import configure_spark_with_delta_pip
from sparkdelta.compat.delta.tables import DeltaTable
from sparkdelta.compat.delta.version import __version__
from sparkdelta.spark.hooks import install

# delta-spark code builds its session with the book's settings, not ``sparkdelta.configure``:
# ``format("delta")`` and Delta SQL must work in any session once ``delta`` is imported.
install()

__all__ = ["DeltaTable", "configure_spark_with_delta_pip", "__version__"]

"""delta-spark's ``delta.tables``: sparkdelta's classes under their delta-spark names."""

from __future__ import annotations

from sparkdelta.builder import DeltaTableBuilder, IdentityGenerator
from sparkdelta.spark.commands.dml.merge import DeltaMergeBuilder
from sparkdelta.spark.commands.optimize import DeltaOptimizeBuilder
from sparkdelta.tables import DeltaTable

__all__ = ["DeltaMergeBuilder", "DeltaOptimizeBuilder", "DeltaTable", "DeltaTableBuilder", "IdentityGenerator"]

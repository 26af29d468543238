"""``ALTER TABLE ... SET / UNSET TBLPROPERTIES`` and ``COMMENT ON TABLE`` on Delta tables, as
delta-spark's ``AlterTableSetPropertiesDeltaCommand`` and ``...UnsetProperties...`` run them.

The ``comment`` property is the table's description, not a configuration key (``COMMENT ON
TABLE t IS 'x'`` is ``SET TBLPROPERTIES ('comment' = 'x')``). Keys another statement owns are
refused with delta-spark's errors: CHECK constraints (ADD CONSTRAINT), the clustering
feature and columns (CLUSTER BY), and Spark's reserved ``location``, ``provider`` and
``owner``. Through SQL an UNSET never fails on a missing key: delta-spark's catalog removes
properties as ``IF EXISTS`` whatever the statement says.
"""

from __future__ import annotations

import json

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from ...exceptions import DeltaAnalysisException, DeltaParseException, DeltaUnsupportedOperationException
from ...kernel import Table, row_tracking
from ...kernel.clustering import CLUSTERING_FEATURE
from ...kernel.command_result import CommandResult
from ...kernel.protocol import FEATURE_PROP_PREFIX
from ...kernel.row_tracking_backfill import backfill, turns_on
from ...kernel.table_properties import normalize_properties
from ..conf import ALLOW_ARBITRARY_PROPERTIES, get_bool
from ..write.constraints import CONSTRAINT_PREFIX
from .alter import UNCHANGED, commit_metadata

COMMENT = "comment"
CLUSTERING_COLUMNS = "clusteringColumns"
# Spark's parser keeps these to clauses of their own.
_RESERVED = {
    "location": "please use the LOCATION clause to specify it",
    "provider": "please use the USING clause to specify it",
    "owner": "it will be set to the current user",
}


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def set_properties(spark: SparkSession, table: Table, properties: dict[str, str]) -> CommandResult:
    for key in properties:
        if key in _RESERVED:
            raise DeltaParseException(
                f"The feature is not supported: {key} is a reserved table property, {_RESERVED[key]}.",
                errorClass="UNSUPPORTED_FEATURE.SET_TABLE_PROPERTY",
            )
        if key.lower().startswith(CONSTRAINT_PREFIX):
            raise DeltaAnalysisException(
                "Please use ALTER TABLE ADD CONSTRAINT to add CHECK constraints.", errorClass="DELTA_ADD_CONSTRAINTS"
            )
        if key.lower() == f"{FEATURE_PROP_PREFIX}{CLUSTERING_FEATURE}".lower():
            raise DeltaAnalysisException(
                "Cannot enable clustering table feature using ALTER TABLE SET TBLPROPERTIES. Please use "
                "CREATE OR REPLACE TABLE CLUSTER BY to create a Delta table with clustering.",
                errorClass="DELTA_ALTER_TABLE_SET_CLUSTERING_TABLE_FEATURE_NOT_ALLOWED",
            )
        if key == CLUSTERING_COLUMNS:
            raise DeltaUnsupportedOperationException(
                f"The Delta table configuration {key} cannot be specified by the user",
                errorClass="DELTA_CANNOT_MODIFY_TABLE_PROPERTY",
            )
    allow = get_bool(spark, ALLOW_ARBITRARY_PROPERTIES)
    recorded: dict[str, str] = {}  # in the statement's order, keys spelled as stored
    for key, value in properties.items():
        recorded.update({key: value} if key == COMMENT else normalize_properties({key: value}, table.root, allow))
    configuration = {k: v for k, v in recorded.items() if k != COMMENT}
    description = recorded.get(COMMENT, UNCHANGED)
    tags = None
    snapshot = table.snapshot()
    if turns_on(snapshot.configuration, {**snapshot.configuration, **configuration}):
        backfill(table, snapshot)  # every file gets row ids first, as delta-spark does it
        tags = {row_tracking.ENABLEMENT_ONLY_TAG: "true"} if list(recorded) == [row_tracking.ENABLE] else None
    return commit_metadata(
        table,
        lambda conf, schema: ({**conf, **configuration}, schema),
        "SET TBLPROPERTIES",
        {"properties": _compact(recorded)},
        description=description,
        tags=tags,
    )


def unset_properties(table: Table, keys: list[str], if_exists: bool) -> CommandResult:
    def stored(key: str, conf: dict[str, str]) -> str | None:
        """The configuration key ``key`` removes: ``delta.*`` keys match in any case, others exactly."""
        if key.lower().startswith("delta."):
            return next((k for k in conf if k.lower() == key.lower()), None)
        return key if key in conf else None

    def change(conf: dict[str, str], schema: StructType) -> tuple[dict[str, str], StructType]:
        missing = [k for k in keys if stored(k, conf) is None and k != COMMENT]
        if missing and not if_exists:
            raise DeltaAnalysisException(
                f"{table.root}: cannot unset {', '.join(missing)}: no such table properties",
                errorClass="DELTA_UNSET_NON_EXISTENT_PROPERTY",
            )
        gone = {stored(k, conf) for k in keys}
        return {k: v for k, v in conf.items() if k not in gone}, schema

    return commit_metadata(
        table,
        change,
        "UNSET TBLPROPERTIES",
        {"properties": _compact(keys), "ifExists": if_exists},
        description=None if COMMENT in keys else UNCHANGED,
    )


__all__ = ["set_properties", "unset_properties"]

"""Column defaults (the ``allowColumnDefaults`` feature): a column's ``CURRENT_DEFAULT``.

A column's default is the SQL expression, in its field metadata, that writes use where they
give the column no value (an INSERT's column list leaving it out, ``DEFAULT`` in VALUES or
UPDATE SET, a MERGE insert clause, a DataFrame append without the column). The engine
evaluates it; the kernel keeps the rule delta-spark keeps: a table gets defaults only once
the feature is enabled explicitly (``delta.feature.allowColumnDefaults``), never as a side
effect of the schema.
"""

from __future__ import annotations

from .actions import Metadata, Protocol
from .errors import InvalidTableOperationError
from .features import iter_fields
from .protocol import FEATURE_PROP_PREFIX, supported_features

FEATURE = "allowColumnDefaults"
KEY = "CURRENT_DEFAULT"


def has_defaults(metadata: Metadata) -> bool:
    return any(KEY in field.metadata for field in iter_fields(metadata.schema))


def check_enabled(metadata: Metadata, protocol: Protocol | None) -> None:
    """Refuse defaults in ``metadata`` unless the table (``protocol``) or the metadata's own
    ``delta.feature.allowColumnDefaults`` property enables the feature, as delta-spark does."""
    if not has_defaults(metadata):
        return
    if protocol is not None and FEATURE in supported_features(protocol):
        return
    wanted = f"{FEATURE_PROP_PREFIX}{FEATURE}".lower()
    if any(key.lower() == wanted for key in metadata.configuration):
        return
    raise InvalidTableOperationError(
        "Failed to execute the command because it assigned a column DEFAULT value, but the corresponding table "
        "feature was not enabled. Please retry the command again after executing ALTER TABLE tableName SET "
        "TBLPROPERTIES('delta.feature.allowColumnDefaults' = 'supported').",
        error_class="WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED",
    )

"""What a commit that sets new metadata must carry with it.

New metadata can turn features on (a property, a constraint, a ``timestamp_ntz`` column,
column mapping); the same commit must then raise the protocol to support them, and
mapped columns must have ids and physical names before any data file is written with
them, and a table supporting row tracking names its materialized columns. Writers call ``prepare`` before writing data; the transaction calls it again at
commit time, where it is a no-op for metadata already prepared.
"""

from __future__ import annotations

from dataclasses import replace

from . import column_defaults, column_mapping, row_tracking
from .actions import Metadata, Protocol
from .protocol import required_protocol, without_protocol_properties


def prepare(
    metadata: Metadata, previous: Metadata | None, protocol: Protocol | None, overwrite_schema: bool = False
) -> tuple[Metadata, Protocol]:
    """The metadata to commit and the protocol it needs (``protocol`` itself when that suffices).

    ``previous`` and ``protocol`` are the table's current metadata and protocol (None for
    a new table). Column defaults need their feature enabled (``column_defaults.check_enabled``).
    Protocol-setting properties (``delta.minReaderVersion``,
    ``delta.feature.*``...) are folded into the protocol and dropped from the metadata.
    """
    column_defaults.check_enabled(metadata, protocol)
    assigned = column_mapping.assign(metadata, previous, overwrite_schema)
    needed = required_protocol(assigned, protocol)
    assigned = row_tracking.with_column_names(assigned, previous, needed)
    stored = without_protocol_properties(assigned.configuration)
    if stored != assigned.configuration:
        assigned = replace(assigned, configuration=stored)
    return assigned, needed

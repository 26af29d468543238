"""A new table's first metadata, protocol and domains, built in one place.

Every way a table comes to be (a DataFrame write, ``DeltaTable.create``, CREATE TABLE,
CONVERT TO DELTA, CLONE) and a write that replaces a table's schema (``overwriteSchema``)
commits the same kind of actions: the metadata (schema JSON, partition columns, the
properties normalised, column-mapping ids and physical names), the protocol those need
(``metadata_change.prepare``, which also folds ``delta.feature.*`` and protocol-version
properties into it) and, for a liquid-clustered table, its clustering domain. As
delta-spark's ``OptimisticTransaction.updateMetadataForNewTable``; the callers only say
what the table is.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from . import metadata_change
from .actions import Action, DomainMetadata, Metadata, Protocol
from .clustering import CLUSTERING_FEATURE, clustering_domain
from .protocol import FEATURE_PROP_PREFIX
from .table_properties import normalize_properties


@dataclass(frozen=True)
class NewTable:
    """What a commit creating (or re-creating) a table carries: ``actions`` are the protocol
    (when it changes), the metadata and the clustering domain (when one is set), in that order."""

    metadata: Metadata
    protocol: Protocol
    actions: tuple[Action, ...]


def _with_clustering_feature(properties: Mapping[str, str], clustering_columns: Sequence[str] | None) -> dict[str, str]:
    if not clustering_columns:
        return dict(properties)
    return {**properties, f"{FEATURE_PROP_PREFIX}{CLUSTERING_FEATURE}": "supported"}


def _domains(metadata: Metadata, clustering_columns: Sequence[str] | None, table: str) -> tuple[DomainMetadata, ...]:
    """The clustering domain (``[]`` clears a replaced table's clustering); none when ``None``."""
    if clustering_columns is None:
        return ()
    return (clustering_domain(metadata.schema, list(clustering_columns), metadata.partition_columns, table),)


def create_table(
    table: str,
    schema_string: str,
    partition_columns: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
    *,
    allow_arbitrary_properties: bool = False,
    inherited_configuration: Mapping[str, str] | None = None,
    clustering_columns: Sequence[str] | None = None,
    description: str | None = None,
    name: str | None = None,
    protocol: Protocol | None = None,
) -> NewTable:
    """A new table (a new id) with ``schema_string`` (Delta schema JSON) and ``partition_columns``.

    ``properties`` are user-given (``delta.*`` keys spelled canonically and checked here;
    unknown ``delta.*`` keys only with ``allow_arbitrary_properties``);
    ``inherited_configuration`` is a configuration already stored by a table (a clone's
    source), kept as it is under them. ``clustering_columns`` make the table liquid
    clustered (an empty list records that it is not, for a replaced clustered table).
    ``protocol`` is one the table already has (replacing a table, cloning one): the new
    table's is never lower.
    """
    given = normalize_properties(
        _with_clustering_feature(properties or {}, clustering_columns), table, allow_arbitrary_properties
    )
    metadata = Metadata(
        str(uuid.uuid4()),
        schema_string,
        tuple(partition_columns),
        {**(inherited_configuration or {}), **given},
        name=name,
        description=description,
        created_time=int(time.time() * 1000),
    )
    prepared, needed = metadata_change.prepare(metadata, None, protocol)
    return NewTable(prepared, needed, (needed, prepared, *_domains(prepared, clustering_columns, table)))


def overwrite_schema(
    table: str,
    current: Metadata,
    current_protocol: Protocol,
    schema_string: str,
    partition_columns: Sequence[str],
    properties: Mapping[str, str] | None = None,
    *,
    clustering_columns: Sequence[str] | None = None,
    description: str | None = None,
) -> NewTable:
    """An existing table (same id) whose schema and partitioning a write replaces (``overwriteSchema``).

    Given ``properties`` are added to the table's (unknown ``delta.*`` keys allowed, as
    delta-spark allows them on an existing table); a given ``description`` replaces its
    own. Columns kept with the same name and type keep their column-mapping ids.
    """
    metadata = replace(
        current,
        schema_string=schema_string,
        partition_columns=tuple(partition_columns),
        description=current.description if description is None else description,
        configuration={
            **current.configuration,
            **normalize_properties(_with_clustering_feature(properties or {}, clustering_columns), table, True),
        },
    )
    prepared, needed = metadata_change.prepare(metadata, current, current_protocol, overwrite_schema=True)
    changed = () if needed is current_protocol else (needed,)
    return NewTable(prepared, needed, (*changed, prepared, *_domains(prepared, clustering_columns, table)))

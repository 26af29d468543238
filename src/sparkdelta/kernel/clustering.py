"""Liquid clustering: the clustering columns a table keeps in its ``delta.clustering`` domain.

The spec's clustered-table feature (``clustering``, which needs ``domainMetadata``)
stores the columns as ``{"clusteringColumns": [["a"], ["s", "b"]]}``: physical names,
one list per (possibly nested) column. Files written by clustering carry
``clusteringProvider``; appends do not, which is how OPTIMIZE finds what it has yet to
cluster. A clustered table has no partition columns.
"""

from __future__ import annotations

import json

from .actions import DomainMetadata
from .errors import InvalidTableOperationError
from .schema import DataType, StructType
from .snapshot import Snapshot

CLUSTERING_DOMAIN = "delta.clustering"
CLUSTERING_FEATURE = "clustering"
CLUSTERING_PROVIDER = "liquid"


def _physical_path(schema: StructType, logical: list[str], table: str) -> list[str]:
    path: list[str] = []
    current: DataType = schema
    for name in logical:
        if not isinstance(current, StructType):
            raise InvalidTableOperationError(f"{table}: clustering column {'.'.join(logical)} is not a column")
        field = next((f for f in current.fields if f.name.lower() == name.lower()), None)
        if field is None:
            raise InvalidTableOperationError(f"{table}: clustering column {'.'.join(logical)} is not a column")
        path.append(field.physical_name)
        current = field.type
    return path


def clustering_domain(schema: StructType, columns: list[str], partition_columns: tuple[str, ...], table: str) -> DomainMetadata:
    """The domain action that makes ``columns`` (dotted logical names) the clustering columns."""
    if columns and partition_columns:
        raise InvalidTableOperationError(f"{table}: a table cannot be both partitioned and clustered")
    physical = [_physical_path(schema, c.split("."), table) for c in columns]
    return DomainMetadata(CLUSTERING_DOMAIN, json.dumps({"clusteringColumns": physical}, separators=(",", ":")))


def clustering_columns(snapshot: Snapshot) -> list[str] | None:
    """The clustering columns as dotted logical names; None when the table is not clustered."""
    domain = snapshot.domain_metadata.get(CLUSTERING_DOMAIN)
    if domain is None or domain.removed:
        return None
    physical = json.loads(domain.configuration or "{}").get("clusteringColumns", [])
    names = []
    for path in physical:
        current: DataType = snapshot.schema
        logical = []
        for part in path:
            fields = current.fields if isinstance(current, StructType) else ()
            field = next(f for f in fields if f.physical_name == part)
            logical.append(field.name)
            current = field.type
        names.append(".".join(logical))
    return names

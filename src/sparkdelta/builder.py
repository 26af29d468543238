"""``DeltaTableBuilder``: delta-spark's ``DeltaTable.create(spark)...execute()`` API.

The builder collects a schema (with NOT NULL, generated columns and comments), the
partitioning, a comment and table properties into a ``TableSpec``, and ``execute()``
runs the CREATE TABLE command (``spark/commands/create_table.py``), as SQL's
``CREATE TABLE`` does; see there for what creating and replacing mean.

A table is named by ``tableName`` (a catalog entry), by ``location`` (a path), or both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession
from pyspark.sql.types import DataType, StructField, StructType, _parse_datatype_string

from .exceptions import DeltaAnalysisException, spark_surface
from .spark.commands.create_table import MODES, TableSpec, column, create_table, with_column

if TYPE_CHECKING:
    from .tables import DeltaTable


@dataclass(frozen=True)
class IdentityGenerator:
    """delta-spark's identity column spec (``generatedAlwaysAs=IdentityGenerator()``); refused on use."""

    start: int = 1
    step: int = 1


@spark_surface
class DeltaTableBuilder:
    """Builds a Delta table: ``DeltaTable.create(spark).tableName(...).addColumn(...).execute()``."""

    def __init__(self, spark: SparkSession, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown builder mode {mode!r}: use one of {', '.join(MODES)}")
        self._spark = spark
        self._mode = mode
        self._name: str | None = None
        self._location: str | None = None
        self._comment: str | None = None
        self._columns: tuple[StructField, ...] = ()
        self._partition_columns: tuple[str, ...] = ()
        self._clustering_columns: tuple[str, ...] = ()
        self._properties: dict[str, str] = {}

    def tableName(self, identifier: str) -> DeltaTableBuilder:
        """The catalog name (``table`` or ``db.table``)."""
        self._name = _text(identifier, "identifier")
        return self

    def location(self, location: str) -> DeltaTableBuilder:
        """Where the table's data and log live."""
        self._location = _text(location, "location")
        return self

    def comment(self, comment: str) -> DeltaTableBuilder:
        """The table's description."""
        self._comment = _text(comment, "comment")
        return self

    def addColumn(
        self,
        colName: str,
        dataType: str | DataType,
        nullable: bool = True,
        generatedAlwaysAs: str | IdentityGenerator | None = None,
        generatedByDefaultAs: IdentityGenerator | None = None,
        comment: str | None = None,
    ) -> DeltaTableBuilder:
        """Add a column; ``dataType`` is a Spark type or its SQL name (``"DECIMAL(10,2)"``)."""
        name = _text(colName, "colName")
        if isinstance(generatedAlwaysAs, IdentityGenerator) or generatedByDefaultAs is not None:
            raise DeltaAnalysisException(
                f"column {name}: identity columns (GENERATED ... AS IDENTITY) are not supported: "
                "sparkdelta cannot write the identityColumns table feature yet"
            )
        data_type = _parse_datatype_string(dataType) if isinstance(dataType, str) else dataType
        if not isinstance(data_type, DataType):
            raise TypeError(f"column {name}: dataType must be a Spark DataType or a type name, not {type(dataType).__name__}")
        if not isinstance(nullable, bool):
            raise TypeError(f"column {name}: nullable must be a bool")
        generated = _text(generatedAlwaysAs, "generatedAlwaysAs") if generatedAlwaysAs is not None else None
        self._add(column(name, data_type, nullable, generated, _text(comment, "comment") if comment is not None else None))
        return self

    def addColumns(self, cols: StructType | list[StructField]) -> DeltaTableBuilder:
        """Add every field of a schema, metadata (comments, generation expressions) included."""
        fields = cols.fields if isinstance(cols, StructType) else cols
        for field in fields:
            if not isinstance(field, StructField):
                raise TypeError(f"addColumns takes a StructType or a list of StructField, not {type(field).__name__}")
            self._add(field)
        return self

    def partitionedBy(self, *cols: str | list[str]) -> DeltaTableBuilder:
        names = cols[0] if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else cols
        self._partition_columns = tuple(_text(c, "partition column") for c in names)
        return self

    def clusterBy(self, *cols: str | list[str]) -> DeltaTableBuilder:
        """Liquid clustering by these columns (OPTIMIZE clusters the data; no partitioning)."""
        names = cols[0] if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else cols
        self._clustering_columns = tuple(_text(c, "clustering column") for c in names)
        return self

    def property(self, key: str, value: str) -> DeltaTableBuilder:
        """A table property, e.g. ``delta.enableChangeDataFeed`` = ``true``."""
        self._properties[_text(key, "key")] = _text(value, "value")
        return self

    def _add(self, field: StructField) -> None:
        self._columns = with_column(self._columns, field)

    def execute(self) -> DeltaTable:
        """Create (or replace) the table and return it."""
        from .tables import DeltaTable

        return DeltaTable.forPath(self._spark, create_table(self._spark, self._spec()).location)

    def _spec(self) -> TableSpec:
        return TableSpec(
            self._mode,
            self._name,
            self._location,
            self._columns,
            self._partition_columns,
            self._clustering_columns,
            dict(self._properties),
            self._comment,
        )


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value

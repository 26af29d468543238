"""Private column names DML puts on target rows and touched-file tables."""

from __future__ import annotations

from ...read.parquet import ROW_INDEX_COLUMN

__all__ = ["FILE_PATH_COLUMN", "MATCHED_ROWS_COLUMN", "ROW_INDEX_COLUMN"]

# Each target row's file: a copy of the ``path`` column of the file's add action.
FILE_PATH_COLUMN = "__sparkdelta_dml_path"
# In a touched-file table: how many of the given rows each file holds.
MATCHED_ROWS_COLUMN = "__sparkdelta_matched_rows"

"""Private column names DML puts on target rows and touched-file tables, and removes of touched files."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa

from ...kernel import RemoveFile
from ..read import ROW_INDEX_COLUMN
from ..write import remove_actions

__all__ = ["FILE_PATH_COLUMN", "MATCHED_ROWS_COLUMN", "ROW_INDEX_COLUMN", "file_removes"]

# Each target row's file: a copy of the ``path`` column of the file's add action.
FILE_PATH_COLUMN = "__sparkdelta_dml_path"
# In a touched-file table: how many of the given rows each file holds.
MATCHED_ROWS_COLUMN = "__sparkdelta_matched_rows"


def file_removes(files: pa.Table) -> list[RemoveFile]:
    """Data-changing removes of ``files`` (rows of ``snapshot.files``): partition values, size, DV and stats kept.

    The spec lets a remove carry its add's stats, and delta-spark's do.
    """
    removes = remove_actions(files, data_change=True)
    stats = files.column("stats").to_pylist() if "stats" in files.column_names else [None] * files.num_rows
    return [r if s is None else replace(r, stats=s) for r, s in zip(removes, stats, strict=True)]

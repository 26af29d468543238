"""Delta's commands (DML, OPTIMIZE, VACUUM, RESTORE, CLONE, CONVERT, ALTER), shared by the ``DeltaTable`` API, SQL and the CLI."""

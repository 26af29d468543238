"""Delta's commands (DML, OPTIMIZE, VACUUM, RESTORE, CLONE, CONVERT, ALTER, DESCRIBE), shared by ``DeltaTable``, SQL and the CLI.

As delta-spark's ``commands/*Command.scala``: each takes a kernel ``Table`` and its
arguments and returns a ``CommandResult`` (``kernel.command_result``: its commit and the
operationMetrics it recorded, a subclass where it has more to return); the callers only
shape that into their own results. Commands with no Spark part (VACUUM, RESTORE, DESCRIBE's
facts) are the kernel's, so the CLI runs them without PySpark; the modules here wrap them
with the session's settings and delta-spark's DataFrames.
"""

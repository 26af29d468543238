"""Delta's SQL on stock PySpark: sqlglot parses, and each statement runs the command the ``DeltaTable`` API runs."""

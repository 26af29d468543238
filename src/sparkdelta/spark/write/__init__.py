"""Writing DataFrames into Delta tables: schema enforcement and evolution, stats, constraints, then one commit."""

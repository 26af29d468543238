"""Structured Streaming on Delta tables: ``readStream`` and ``writeStream`` with ``format("delta")``."""

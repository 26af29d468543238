"""Structured Streaming over Delta tables: the source (``readStream``) and the sink (``writeStream``)."""

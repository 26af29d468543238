"""Reading Delta tables: snapshots as native Parquet scans, file pruning on filters, the change feed."""

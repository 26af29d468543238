"""The current main job: build a small Delta table with the kernel and walk its history.

It writes Parquet files with pyarrow and commits them through the kernel (appends, a
delete, checkpoints), then time-travels through every version. It stands in until the
lakehouse pipeline (bronze, silver, gold on PySpark) becomes the main job.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .cli import describe_snapshot
from .kernel import AddFile, Metadata, Protocol, RemoveFile, Table

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "RideId", "type": "long", "nullable": False, "metadata": {}},
        {"name": "VendorId", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "TotalAmount", "type": "double", "nullable": True, "metadata": {}},
    ],
}


def _write_file(root: Path, batch: pa.Table, vendor: int) -> AddFile:
    """One Parquet file in the partition directory, with delta-spark-style stats."""
    relative = f"VendorId={vendor}/part-00000-{uuid.uuid4()}.c000.snappy.parquet"
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    data = batch.drop_columns(["VendorId"])
    pq.write_table(data, target, compression="snappy")
    stats = {
        "numRecords": data.num_rows,
        "minValues": {c: pc.min(data[c]).as_py() for c in data.column_names},
        "maxValues": {c: pc.max(data[c]).as_py() for c in data.column_names},
        "nullCount": {c: data[c].null_count for c in data.column_names},
    }
    return AddFile(relative, {"VendorId": str(vendor)}, target.stat().st_size, int(time.time() * 1000), stats=json.dumps(stats))


def run(warehouse: Path) -> None:
    root = warehouse / "demo_trips"
    shutil.rmtree(root, ignore_errors=True)
    table = Table(str(root))
    started = time.perf_counter()
    metadata = Metadata(
        str(uuid.uuid4()),
        json.dumps(SCHEMA),
        ("VendorId",),
        {"delta.checkpointInterval": "2"},
        created_time=int(time.time() * 1000),
    )
    table.transaction().commit([Protocol(1, 2), metadata], "CREATE TABLE", {"isManaged": "false"})
    ride = 0
    for _day in range(3):
        adds = []
        for vendor in (1, 2):
            rows = pa.table(
                {
                    "RideId": pa.array(range(ride, ride + 1000), pa.int64()),
                    "VendorId": pa.array([vendor] * 1000, pa.int32()),
                    "TotalAmount": pa.array([5.0 + (i % 50) for i in range(1000)]),
                }
            )
            ride += 1000
            adds.append(_write_file(root, rows, vendor))
        table.transaction().commit(adds, "WRITE", {"mode": "Append"}, {"numFiles": len(adds), "numOutputRows": 2000})
    victim = table.snapshot().file_paths()[0]
    tx = table.transaction()
    tx.mark_files_read([victim])
    tx.commit([RemoveFile(victim, int(time.time() * 1000))], "DELETE", {"predicate": json.dumps(["VendorId = 1 AND day = 0"])})
    elapsed = time.perf_counter() - started

    facts = describe_snapshot(table.snapshot())
    print(f"table {root}: version {facts['version']}, {facts['numFiles']} files, {facts['sizeInBytes']} bytes")
    for record in reversed(table.history()):
        snapshot = table.snapshot(record.version)
        rows = sum(json.loads(s)["numRecords"] for s in snapshot.files.column("stats").to_pylist() if s)
        print(f"  version {record.version}: {record.commit_info['operation']:<12} files={snapshot.num_files} rows={rows}")
    checkpoints = sorted(p.name for p in (root / "_delta_log").glob("*.checkpoint.parquet"))
    print(f"checkpoints: {', '.join(checkpoints)}")
    print(f"built in {elapsed:.2f}s")


if __name__ == "__main__":
    run(Path(os.environ.get("SPARKDELTA_WAREHOUSE", "warehouse")))

#!/usr/bin/env python
"""Benchmark the sparkdelta kernel against delta-rs (``deltalake``) on an S3 endpoint (moto).

What it does, in one run:

1. Builds (or reuses) ``bench_kernel.py``'s log-only table on local disk: ``--commits``
   commits of ``--files-per-commit`` AddFile actions (default 1,000 x 100 = 100,000 active
   files), checkpoints every 10. Committing that through S3 would take far longer and
   measure nothing we compare.
2. Starts ``moto_server`` on 127.0.0.1 (stopped at the end) and uploads the ``_delta_log``
   into a bucket with ``obstore``, objects named as on disk.
3. Checks that our active files equal delta-rs's at the latest and the time-travel version.
4. Times, in-process, interleaved, after ``--warmup`` runs, ``--repeats`` cold loads each:
   a) latest snapshot incl. the full file list (Arrow), b) time travel to ``commits // 2``.
5. Commit latency: on a fresh table of each side on the same endpoint, ``--commit-count``
   log-only commits of one AddFile (with stats), alternating ours and delta-rs's, p50 and
   p99 (checkpoints every 10 included on both sides). Ours is
   ``table.transaction().commit([add])``; delta-rs's is
   ``DeltaTable.create_write_transaction([AddAction], mode="append", ...)``.
6. Counts the HTTP requests of one cold load of each side, and of ten commits, through a
   ``RecordingProxy`` (``tests/object_stores.py``) that parses every HTTP/1.1 request it
   relays to moto. Timings go straight to moto; only the counting runs go through it.
7. Prints machine info, a results table, ratios ours/delta-rs and PASS/FAIL per target.

Run:  python benchmarks/bench_object_store.py                  (~3 minutes on 2 busy cores)
      python benchmarks/bench_object_store.py --commits 100 --files-per-commit 20   (quick)
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import obstore
from bench_kernel import (
    TableSpec,
    Timing,
    _add_files,
    _create_actions,
    add_table_arguments,
    build_table,
    fmt_s,
    measure,
    print_table,
    verdict,
)
from machine import git_revision, machine_info, print_profile
from obstore.store import S3Store

import sparkdelta
from sparkdelta.kernel import AddFile, Table
from sparkdelta.kernel.snapshot import clear_log_cache

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from object_stores import HttpRequest, MotoServer, RecordingProxy, start_moto  # noqa: E402

try:
    import deltalake
    from deltalake import DeltaTable
    from deltalake.transaction import AddAction
except ImportError:  # pragma: no cover - the benchmark needs it
    sys.exit("deltalake (delta-rs) is not installed: pip install deltalake")

TARGET_RATIO = 1.0


def machine_rows() -> list[tuple[str, str]]:
    import moto
    import pyarrow as pa

    return [
        *machine_info(),
        ("pyarrow", pa.__version__),
        ("obstore", obstore.__version__),
        ("deltalake", f"{deltalake.__version__} (delta-rs core {getattr(deltalake, 'rust_core_version', lambda: '?')()})"),
        ("moto", moto.__version__),
        ("sparkdelta", f"{getattr(sparkdelta, '__version__', '?')} (git {git_revision()})"),
    ]


# --------------------------------------------------------------------------- the endpoint


def upload_log(server: MotoServer, local: Path, bucket: str, prefix: str) -> tuple[int, int]:
    """Every file of ``local/_delta_log`` to ``bucket/prefix/_delta_log``, eight at a time."""
    store = S3Store(
        bucket, config={k: v for k, v in server.options.items() if k != "aws_allow_http"}, client_options={"allow_http": True}
    )
    files = sorted(p for p in (local / "_delta_log").iterdir() if p.is_file())

    def put(path: Path) -> int:
        data = path.read_bytes()
        obstore.put(store, f"{prefix}/_delta_log/{path.name}", data)
        return len(data)

    with ThreadPoolExecutor(8) as pool:
        sizes = list(pool.map(put, files))
    return len(files), sum(sizes)


def describe(requests: list[HttpRequest]) -> str:
    """``3 (1 LIST, 2 GET)``: the total and a breakdown by kind."""
    kinds: Counter[str] = Counter()
    for r in requests:
        if r.method == "GET" and "list-type=2" in r.target:
            kinds["LIST"] += 1
        elif r.method == "GET" and "range" in r.headers:
            kinds["GET range"] += 1
        elif r.method == "POST" and "?delete" in r.target:
            kinds["DELETE batch"] += 1
        else:
            kinds[r.method] += 1
    return f"{len(requests)} ({', '.join(f'{n} {k}' for k, n in kinds.most_common())})"


# --------------------------------------------------------------------------- operations


def ours_load(url: str, options: dict[str, str], version: int | None) -> int:
    clear_log_cache()  # cold, as delta-rs is on every DeltaTable(...)
    return Table(url, storage_options=options).snapshot(version=version).num_files  # reconciles .files (Arrow)


def theirs_load(url: str, options: dict[str, str], version: int | None) -> int:
    return DeltaTable(url, version=version, storage_options=options).get_add_actions(flatten=False).num_rows


def check_same_files(url: str, options: dict[str, str], version: int | None, expected: int) -> str:
    ours = Table(url, storage_options=options).snapshot(version=version)
    theirs = DeltaTable(url, version=version, storage_options=options)
    where = "latest" if version is None else f"version {version}"
    our_paths = set(ours.file_paths())
    their_paths = set(theirs.get_add_actions(flatten=True).column("path").to_pylist())
    assert len(our_paths) == ours.num_files == expected, f"{where}: ours has {ours.num_files:,} files, expected {expected:,}"
    assert our_paths == their_paths, f"{where}: ours {len(our_paths):,} paths differ from delta-rs's {len(their_paths):,}"
    return f"{where:>12}: ours {len(our_paths):,} files == delta-rs {len(their_paths):,} files (same paths; v{ours.version})"


class Writers:
    """A fresh table per side on the endpoint, committed to one AddFile at a time.

    Both sides keep one handle across commits, as a long-running writer would: our
    ``Table`` (each transaction reads the latest snapshot, reusing parsed commits), and
    delta-rs's ``DeltaTable`` (each transaction updates its loaded state).
    """

    def __init__(self, spec: TableSpec, options: dict[str, str], bucket: str) -> None:
        self.spec = spec
        self.ours = Table(f"s3://{bucket}/commits-ours", storage_options=options)
        self.ours.transaction().commit(_create_actions(spec, "sparkdelta-commits"), "CREATE TABLE")
        their_url = f"s3://{bucket}/commits-delta-rs"
        DeltaTable.create(
            their_url,
            deltalake.Schema.from_json(spec.schema_string()),
            partition_by=[spec.partition_column],
            configuration={"delta.checkpointInterval": str(spec.checkpoint_interval)},
            storage_options=options,
        )
        self.theirs = DeltaTable(their_url, storage_options=options)
        self.their_schema = self.theirs.schema()
        self.n = 0

    def _next_add(self) -> AddFile:
        self.n += 1
        return _add_files(self.spec, self.n, 1, seed=7)[0]

    def commit_ours(self) -> float:
        add = self._next_add()
        t0 = time.perf_counter()
        self.ours.transaction().commit([add], "WRITE", {"mode": "Append"})
        return time.perf_counter() - t0

    def commit_theirs(self) -> float:
        add = self._next_add()
        action = AddAction(add.path, add.size, dict(add.partition_values), add.modification_time, True, add.stats or "")
        t0 = time.perf_counter()
        self.theirs.create_write_transaction(
            [action], mode="append", schema=self.their_schema, partition_by=[self.spec.partition_column]
        )
        return time.perf_counter() - t0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workdir",
        default="/tmp/sparkdelta-bench/kernel",
        type=Path,
        help="where the local table is built, shared with bench_kernel.py (default: %(default)s)",
    )
    add_table_arguments(parser)
    parser.add_argument("--commit-count", type=int, default=100, help="commits per side for the latency (default: %(default)s)")
    parser.add_argument("--profile", action="store_true", help="also cProfile our latest-snapshot load")
    parser.add_argument("--strict", action="store_true", help="exit with status 1 if any target FAILs")
    args = parser.parse_args(argv)

    spec = TableSpec(args.commits, args.files_per_commit, args.partitions)
    tt_version = args.commits // 2
    workdir: Path = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    local = workdir / f"table-{spec.commits}x{spec.files_per_commit}-{spec.partition_type}"

    print("=" * 78)
    print("sparkdelta kernel vs delta-rs on S3 (moto_server on 127.0.0.1)")
    print("=" * 78)
    for key, value in machine_rows():
        print(f"{key:>11}: {value}")
    print(
        f"{'shape':>11}: {spec.commits:,} commits x {spec.files_per_commit} AddFile = {spec.files_at(spec.commits - 1):,} "
        f"active files, checkpoint every {spec.checkpoint_interval}"
    )
    print()

    build = build_table(local, spec, rebuild=False)
    print(f"local table: {local} ({'reused' if build.reused else f'built in {build.seconds:.0f} s'})")
    moto_logs = tempfile.TemporaryDirectory(prefix="bench-moto-")
    server = start_moto(Path(moto_logs.name))
    proxy = RecordingProxy(int(server.endpoint.rsplit(":", 1)[1]))
    try:
        bucket = server.new_bucket("bench")
        t0 = time.perf_counter()
        count, size = upload_log(server, local, bucket, "big")
        print(
            f"uploaded {count:,} log files, {size / 1e6:.0f} MB to s3://{bucket}/big in {time.perf_counter() - t0:.0f} s ({server.endpoint})"
        )
        options = server.options
        counted = {**options, "aws_endpoint_url": proxy.endpoint}
        url = f"s3://{bucket}/big"

        print("\ncorrectness")
        try:
            print("  " + check_same_files(url, options, None, spec.files_at(spec.commits - 1)))
            print("  " + check_same_files(url, options, tt_version, spec.files_at(tt_version)))
        except AssertionError as exc:
            print(f"  FAIL: {exc}")
            return 2

        print("\nrequests ...", flush=True)
        requests: dict[str, list[HttpRequest]] = {}
        for label, version in (("latest", None), ("travel", tt_version)):
            for side, load in (("ours", ours_load), ("theirs", theirs_load)):
                proxy.take()
                load(url, counted, version)
                requests[f"{side}_{label}"] = proxy.take()

        print("timing loads ...", flush=True)

        def loads(version: int | None) -> dict[str, Timing]:
            fns: dict[str, Callable[[], Any]] = {
                "ours": lambda: ours_load(url, options, version),
                "theirs": lambda: theirs_load(url, options, version),
            }
            return measure(fns, args.repeats, args.warmup)

        latest, travel = loads(None), loads(tt_version)

        print(f"timing {args.commit_count} commits per side ...", flush=True)
        writers = Writers(spec, options, bucket)
        ours_lat, theirs_lat = [], []
        gc.collect()
        for i in range(args.commit_count):  # alternating, so load drift hits both alike
            pair = (writers.commit_ours, writers.commit_theirs) if i % 2 == 0 else (writers.commit_theirs, writers.commit_ours)
            for commit in pair:
                (ours_lat if commit == writers.commit_ours else theirs_lat).append(commit())
        counting = Writers(spec, counted, server.new_bucket("count"))
        proxy.take()
        for _ in range(10):
            counting.commit_ours()
        requests["ours_commits"] = proxy.take()
        for _ in range(10):
            counting.commit_theirs()
        requests["theirs_commits"] = proxy.take()

        if args.profile:
            print_profile(lambda: ours_load(url, options, None), "Table(s3 url).snapshot().num_files", 25)
    finally:
        proxy.close()
        server.stop()
        moto_logs.cleanup()

    print()
    print(f"results (loads: best and median of {args.repeats} cold runs; ratio = ours / delta-rs, < 1.0 means ours is faster)")
    rows: list[list[str]] = []
    verdicts: list[tuple[str, str, bool]] = []
    for letter, title, group in (
        ("a", f"latest snapshot + file list ({spec.files_at(spec.commits - 1):,} files)", latest),
        ("b", f"time travel to v{tt_version} + file list ({spec.files_at(tt_version):,} files)", travel),
    ):
        ours, theirs = group["ours"], group["theirs"]
        rb, rm = ours.best / theirs.best, ours.median / theirs.median
        rows.append([f"{letter}) {title}", "", "", "", ""])
        rows.append(
            ["  ours     Table(url).snapshot().num_files", fmt_s(ours.best), fmt_s(ours.median), f"{rb:.2f}", f"{rm:.2f}"]
        )
        rows.append(["  delta-rs DeltaTable(url).get_add_actions()", fmt_s(theirs.best), fmt_s(theirs.median), "", ""])
        verdicts.append(
            (
                f"{letter}) {title.split(' (')[0]}: time",
                f"ratio {rb:5.2f} (median {rm:5.2f}), target <= {TARGET_RATIO:.1f}",
                rb <= TARGET_RATIO,
            )
        )
    p50 = (percentile(ours_lat, 0.5), percentile(theirs_lat, 0.5))
    p99 = (percentile(ours_lat, 0.99), percentile(theirs_lat, 0.99))
    rows.append(
        [
            f"c) {args.commit_count} log-only 1-AddFile commits per side, checkpoint every {spec.checkpoint_interval}",
            "p50",
            "p99",
            "ratio p50",
            "ratio p99",
        ]
    )
    rows.append(
        [
            "  ours     table.transaction().commit([add])",
            fmt_s(p50[0]),
            fmt_s(p99[0]),
            f"{p50[0] / p50[1]:.2f}",
            f"{p99[0] / p99[1]:.2f}",
        ]
    )
    rows.append(["  delta-rs dt.create_write_transaction([add])", fmt_s(p50[1]), fmt_s(p99[1]), "", ""])
    verdicts.append(("c) commit latency p50", f"ratio {p50[0] / p50[1]:5.2f}, target <= {TARGET_RATIO:.1f}", p50[0] <= p50[1]))
    verdicts.append(("c) commit latency p99", f"ratio {p99[0] / p99[1]:5.2f}, target <= {TARGET_RATIO:.1f}", p99[0] <= p99[1]))
    print_table(["measurement", "best/p50", "median/p99", "ratio", "ratio median"], rows)

    print("\nd) HTTP requests (RecordingProxy in front of moto; one cold load, or ten commits)")
    for label, key in (("latest snapshot", "latest"), (f"time travel to v{tt_version}", "travel"), ("10 commits", "commits")):
        ours_r, theirs_r = requests[f"ours_{key}"], requests[f"theirs_{key}"]
        print(f"  {label:<22} ours     {describe(ours_r)}")
        print(f"  {'':<22} delta-rs {describe(theirs_r)}")
        if key != "commits":
            verdicts.append(
                (f"d) requests, {label}", f"ours {len(ours_r)} vs delta-rs {len(theirs_r)}", len(ours_r) <= len(theirs_r))
            )

    print("\nverdicts")
    for name, detail, ok in verdicts:
        print(f"  {name:<40} {detail:<44} {verdict(ok)}")
    checks = [ok for _, _, ok in verdicts]
    print(f"\noverall: {verdict(all(checks))} ({sum(checks)}/{len(checks)} targets met)")
    return 1 if args.strict and not all(checks) else 0


if __name__ == "__main__":
    sys.exit(main())

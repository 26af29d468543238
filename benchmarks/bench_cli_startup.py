#!/usr/bin/env python
"""Benchmark the ``sparkdelta`` CLI as whole processes against ``python -c`` with delta-rs.

Why: a command-line tool is judged by how long the whole process takes, imports included,
and by its peak memory. ``sparkdelta files|history|describe`` on a 100,000-file log should
take no longer, and use no more memory, than a Python one-liner doing the same with
``deltalake`` (delta-rs, whose log replay is Rust).

What it does, in one run:

1. Builds (or reuses) ``bench_kernel.py``'s log-only table, with its cache under
   ``--workdir``: ``--commits`` commits of ``--files-per-commit`` AddFile actions (default
   1,000 x 100 = 100,000 active files), checkpoint every 10 commits. Byte-compiles
   sparkdelta's modules, as installing a package does (site-packages, deltalake included,
   hold their ``.pyc``; an editable checkout under ``PYTHONDONTWRITEBYTECODE`` has none).
2. Checks that each pair prints the same facts (paths, versions, file count and size).
3. For each command, runs ours and delta-rs's in turn (A B A B ...), ``--warmup`` untimed
   pairs then ``--repeats`` timed pairs, stdout to /dev/null: wall time around the
   process, peak RSS from ``wait4`` (the child's ``ru_maxrss``). The processes are started
   by a bare Python (no site-packages): Linux counts the parent's memory at the fork in
   the child's peak, so this script, which holds pyarrow and deltalake, must not start
   them itself. The starter's own peak, the floor under every figure, is printed.
4. Prints machine info, medians, ratios ours/delta-rs (ratio of the medians; the median of
   the pairwise ratios too) and PASS/FAIL against <= 1.0, for wall time and for peak RSS.

The pairs (ours is the console script ``sparkdelta`` next to this Python, or
``python -m sparkdelta.cli`` without it or with ``--pythonpath``; delta-rs's is
``python -c`` with the code in ``THEIRS``):

| ours | delta-rs: ``t = DeltaTable(path)``, then |
| --- | --- |
| ``sparkdelta files PATH``: active paths, sorted, one per line | ``t.file_uris()``, sorted, one per line |
| ``sparkdelta history PATH``: version, timestamp, operation, parameters per commit | ``t.history()``, the same four per commit |
| ``sparkdelta describe PATH``: version and its timestamp, protocol, metadata, schema, file count and size | ``t.version()``, ``t.history(1)``, ``t.protocol()``, ``t.metadata()``, ``t.schema().to_json()``, count and sum of ``size_bytes`` of ``t.get_add_actions()`` |

Run:  python benchmarks/bench_cli_startup.py              (about 1 minute, the table reused)
      python benchmarks/bench_cli_startup.py --repeats 9  (on a noisy machine)
      python benchmarks/bench_cli_startup.py --pythonpath /tmp/old/src   (an older checkout as ours)
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bench_kernel import TableSpec, add_table_arguments, build_table, print_table, verdict
from machine import git_revision, load_average, machine_info

try:
    import deltalake
except ImportError:  # pragma: no cover - the benchmark needs it
    sys.exit("deltalake (delta-rs) is not installed: pip install deltalake")

TARGET_RATIO = 1.0
COMMANDS = ("files", "history", "describe")

_OPEN = "import sys\nfrom deltalake import DeltaTable\nt = DeltaTable(sys.argv[1])\n"
THEIRS = {
    "files": _OPEN + 'sys.stdout.write("".join(uri + "\\n" for uri in sorted(t.file_uris())))\n',
    "history": _OPEN
    + "import json\n"
    + "for h in t.history():\n"
    + '    params = json.dumps(h.get("operationParameters", {}), separators=(",", ":"))\n'
    + '    print(h["version"], h["timestamp"], h.get("operation"), params)\n',
    "describe": _OPEN
    + "adds = t.get_add_actions(flatten=False)\n"
    + 'print(t.version(), t.history(1)[0]["timestamp"], t.protocol(), t.metadata(), t.schema().to_json())\n'
    + 'print(adds.num_rows, sum(adds.column("size_bytes").to_pylist()))\n',
}


def ours_command(command: str, table: str, pythonpath: Path | None = None) -> list[str]:
    script = Path(sys.executable).parent / "sparkdelta"
    program = [str(script)] if script.exists() and pythonpath is None else [sys.executable, "-m", "sparkdelta.cli"]
    return [*program, command, table]


def theirs_command(command: str, table: str) -> list[str]:
    return [sys.executable, "-c", THEIRS[command], table]


def child_env(pythonpath: Path | None) -> dict[str, str]:
    if pythonpath is None:
        return dict(os.environ)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(pythonpath), os.environ.get("PYTHONPATH")]))}


# Runs in a bare Python (``-S``: no site-packages), so its children's peaks start from its
# small footprint. Argument: JSON {"pairs", "warmup", "repeats", "env"}; prints JSON results.
RUNNER = r"""
import json, os, subprocess, sys, time

spec = json.loads(sys.argv[1])


def once(argv):
    with open(os.devnull, "wb") as sink:
        t0 = time.perf_counter()
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE, env=spec["env"])
        stderr = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - t0
        process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(argv[:3])}... failed: {stderr.decode()[-500:]}")
    return wall, usage.ru_maxrss / 1024


ours, theirs = spec["pair"]
for _ in range(spec["warmup"]):
    once(ours)
    once(theirs)
runs = {"ours": {"wall": [], "peak_mib": []}, "theirs": {"wall": [], "peak_mib": []}}
for i in range(spec["repeats"]):
    pair = (("ours", ours), ("theirs", theirs))
    for name, argv in pair if i % 2 == 0 else reversed(pair):
        wall, peak = once(argv)
        runs[name]["wall"].append(wall)
        runs[name]["peak_mib"].append(peak)
# The floor is this process's own high-water mark (its ru_maxrss counts its parent's).
status = open("/proc/self/status").read() if os.path.exists("/proc/self/status") else ""
runs["floor_mib"] = next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmHWM:")), None)
print(json.dumps(runs))
"""


@dataclass
class Runs:
    wall: list[float] = field(default_factory=list)
    peak_mib: list[float] = field(default_factory=list)


def measure(
    ours: list[str], theirs: list[str], env: dict[str, str], repeats: int, warmup: int
) -> tuple[Runs, Runs, float | None]:
    """``warmup`` untimed pairs, then ``repeats`` timed pairs, ours and delta-rs's alternating,
    started by ``RUNNER``; also returns the starter's own peak (the floor) in MiB."""
    spec = json.dumps({"pair": [ours, theirs], "warmup": warmup, "repeats": repeats, "env": env})
    done = subprocess.run([sys.executable, "-S", "-c", RUNNER, spec], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"FAIL: {done.stderr.strip()[-800:]}")
    runs = json.loads(done.stdout)
    return Runs(**runs["ours"]), Runs(**runs["theirs"]), runs["floor_mib"]


def output(argv: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(argv[:3])}... exited {done.returncode}: {done.stderr[-500:]}")
    return done.stdout


def check_same_facts(table: Path, pythonpath: Path | None) -> list[str]:
    """Each pair prints the same facts: the paths, the versions, the file count and size."""
    root, env = str(table), child_env(pythonpath)
    ours = output(ours_command("files", root, pythonpath), env).splitlines()
    theirs = [
        uri.removeprefix(f"file://{root}/").removeprefix(f"{root}/") for uri in output(theirs_command("files", root)).splitlines()
    ]
    assert ours == theirs, f"files: ours lists {len(ours):,} paths, delta-rs {len(theirs):,}; first difference " + next(
        (f"{a!r} vs {b!r}" for a, b in zip(ours, theirs, strict=False) if a != b), "in length"
    )
    our_versions = [int(line.split()[0]) for line in output(ours_command("history", root, pythonpath), env).splitlines()[1:]]
    their_versions = [int(line.split()[0]) for line in output(theirs_command("history", root)).splitlines()]
    assert our_versions == their_versions, f"history: ours {our_versions[:3]}... vs delta-rs {their_versions[:3]}..."
    facts = json.loads(output([*ours_command("describe", root, pythonpath), "--json"], env))
    count, size = output(theirs_command("describe", root)).splitlines()[-1].split()
    assert (facts["numFiles"], facts["sizeInBytes"]) == (int(count), int(size)), (
        f"describe: ours {facts} vs delta-rs {count} {size}"
    )
    return [
        f"files: the same {len(ours):,} paths in the same order",
        f"history: the same {len(our_versions):,} versions, newest first",
        f"describe: the same version {facts['version']}, {facts['numFiles']:,} files, {facts['sizeInBytes']:,} bytes",
    ]


def byte_compile(pythonpath: Path | None) -> Path:
    """sparkdelta's package directory (``pythonpath``'s, if given), byte-compiled."""
    if pythonpath is None:
        spec = importlib.util.find_spec("sparkdelta")
        assert spec is not None and spec.submodule_search_locations, "sparkdelta is not installed"
        package = Path(next(iter(spec.submodule_search_locations)))
    else:
        package = pythonpath / "sparkdelta"
    if not compileall.compile_dir(package, quiet=1):
        raise SystemExit(f"FAIL: cannot byte-compile {package}")
    return package


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workdir",
        default="/tmp/sparkdelta-bench/kernel",
        type=Path,
        help="where bench_kernel.py keeps its tables; the big one is reused (default: %(default)s)",
    )
    parser.add_argument("--rebuild", action="store_true", help="rebuild the table even if it exists")
    add_table_arguments(parser)
    parser.add_argument(
        "--commands", nargs="+", choices=COMMANDS, default=list(COMMANDS), help="commands to measure (default: all)"
    )
    parser.add_argument(
        "--pythonpath",
        type=Path,
        help="run ours as python -m sparkdelta.cli with this directory first on PYTHONPATH (another checkout's src)",
    )
    parser.add_argument("--strict", action="store_true", help="exit with status 1 if any target FAILs")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    pythonpath: Path | None = args.pythonpath.resolve() if args.pythonpath else None

    spec = TableSpec(args.commits, args.files_per_commit, args.partitions)
    workdir: Path = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    table = workdir / f"table-{spec.commits}x{spec.files_per_commit}-{spec.partition_type}"

    print("=" * 78)
    print("sparkdelta CLI start-up vs python -c with delta-rs, whole processes")
    print("=" * 78)
    for key, value in [
        *machine_info(),
        ("deltalake", deltalake.__version__),
        (
            "sparkdelta",
            f"{byte_compile(pythonpath)} ({f'git {git_revision()}' if pythonpath is None else 'from --pythonpath'}), byte-compiled",
        ),
        ("ours", " ".join(ours_command("COMMAND", "PATH", pythonpath)) + (f"  (PYTHONPATH={pythonpath})" if pythonpath else "")),
    ]:
        print(f"{key:>11}: {value}")
    print(f"{'table':>11}: {table}")
    print(
        f"{'shape':>11}: {spec.commits:,} commits x {spec.files_per_commit} AddFile = {spec.files_at(spec.commits - 1):,} "
        f"active files, checkpoint every {spec.checkpoint_interval}"
    )
    print(f"{'method':>11}: {args.warmup} untimed + {args.repeats} timed pairs per command, alternating; stdout to /dev/null")
    report = build_table(table, spec, args.rebuild)
    print(f"{'build':>11}: {'reused' if report.reused else f'built in {report.seconds:.1f} s'}")
    print()
    for line in check_same_facts(table, pythonpath):
        print(f"check: {line}")
    print()

    rows, verdicts, floors = [], [], []
    for command in args.commands:
        ours, theirs, floor = measure(
            ours_command(command, str(table), pythonpath),
            theirs_command(command, str(table)),
            child_env(pythonpath),
            args.repeats,
            args.warmup,
        )
        floors.append(floor)
        for label, a, b in (("wall", ours.wall, theirs.wall), ("peak RSS", ours.peak_mib, theirs.peak_mib)):
            ratio = statistics.median(a) / statistics.median(b)
            pairwise = statistics.median(x / y for x, y in zip(a, b, strict=True))
            unit = (lambda v: f"{v:.3f} s") if label == "wall" else (lambda v: f"{v:.0f} MiB")
            rows.append(
                [
                    f"{command}, {label}",
                    f"{unit(statistics.median(a))} ({unit(min(a))}-{unit(max(a))})",
                    f"{unit(statistics.median(b))} ({unit(min(b))}-{unit(max(b))})",
                    f"{ratio:.2f} (pairwise {pairwise:.2f})",
                    verdict(ratio <= TARGET_RATIO),
                ]
            )
            verdicts.append(ratio <= TARGET_RATIO)
    print_table(
        ["command, measure", "ours: median (min-max)", "delta-rs: median (min-max)", "ratio ours/delta-rs", "<= 1.0"], rows
    )
    known = [f for f in floors if f is not None]
    print(f"\npeak RSS floor (the starter's own peak): {f'{max(known):.0f} MiB' if known else 'unknown'}")
    print(f"load avg at the end: {load_average()}")
    print(f"overall: {verdict(all(verdicts))} ({sum(verdicts)}/{len(verdicts)} targets met)")
    return 1 if args.strict and not all(verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())

"""What every benchmark prints about the machine it ran on."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from pathlib import Path


def load_average() -> str:
    """1/5/15-minute load, flagged when other work competes for the CPUs."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    busy = one > 0.5 * (os.cpu_count() or 1)
    return f"{one:.2f} {five:.2f} {fifteen:.2f}" + ("  (machine busy: timings may be noisy)" if busy else "")


def git_revision() -> str:
    try:
        result = subprocess.run(
            ["git", "-C", str(Path(__file__).resolve().parent), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        return result.stdout.strip() or "n/a"
    except (OSError, subprocess.SubprocessError):
        return "n/a"


def _proc_value(path: str, prefix: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine_info() -> list[tuple[str, str]]:
    """Date, host, CPUs, memory, load and Python: the rows every benchmark starts with."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    kib = _proc_value("/proc/meminfo", "MemTotal")
    memory = f"{int(kib.split()[0]) / 1024 / 1024:.1f} GiB" if kib else "unknown"
    return [
        ("date", dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
        ("host", f"{platform.node()} ({platform.platform()})"),
        ("nproc", f"{usable} usable of {os.cpu_count()}"),
        ("cpu", _proc_value("/proc/cpuinfo", "model name") or "unknown"),
        ("memory", memory),
        ("load avg", load_average()),
        ("python", f"{platform.python_implementation()} {platform.python_version()}"),
    ]

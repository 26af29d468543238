"""delta-spark's streaming and change data feed examples, ported by their import and session only.

Each example runs in its own Python process (it builds and stops its own session) and must
exit cleanly; its printed tables are checked where the example's data makes them certain.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent / "delta_spark_examples"
SRC = Path(__file__).resolve().parents[2] / "src"
DELTA_CONFIGS = re.compile(r'\s*\\\n\s*\.config\("spark\.sql\.(extensions|catalog\.spark_catalog)", "[^"]+"\)')


def ported(source: str) -> str:
    """The example as a user ports it: sparkdelta's DeltaTable, sparkdelta's session settings."""
    text = source.replace("from delta.tables import DeltaTable", "from sparkdelta.tables import DeltaTable\nimport sparkdelta")
    text, removed = DELTA_CONFIGS.subn("", text)
    assert removed == 2, "the example's session settings changed upstream"
    return text.replace("spark = SparkSession.builder", "spark = sparkdelta.configure(SparkSession.builder)")


def run_example(name: str, tmp_path: Path) -> str:
    script = tmp_path / name
    script.write_text(ported((EXAMPLES / name).read_text()))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


@pytest.mark.parametrize("name", ["streaming.py", "change_data_feed.py"])
def test_example_runs(name: str, tmp_path: Path) -> None:
    out = run_example(name, tmp_path)
    if name == "streaming.py":
        # The streaming write to tbl1 appended tbl2's 90 rows despite tbl2's dataChange=false rewrite.
        after = out.split("######### After streaming write #########")[1]
        assert len(re.findall(r"^\|\s*\d+\|$", after, flags=re.MULTILINE)) == 20  # show() prints 20 of 100 rows
        assert "Reading from stream" in out
    else:
        # The change feed stream from version 0 shows every change of versions 1 to 5.
        streamed = out.split("Streaming by table name")[1]
        for change in ("insert", "update_preimage", "update_postimage", "delete"):
            assert change in streamed

"""bench/append_compaction.py runs end to end in its quick mode: it builds the append table,
measures the floor, our compaction and Paimon Java 0.9's on copies, and prints each figure."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_bench_runs_in_its_quick_mode(paimon_java, tmp_path):
    quick = ["--files", "100", "--rows-per-file", "100", "--scale", "0.01", "--keep"]
    done = subprocess.run(
        [sys.executable, "bench/append_compaction.py", *quick, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "input: 100 files" in out
    files = {
        line[:3]: int(found.group(1))
        for line in out.splitlines()
        if line.startswith(("(a)", "(b)", "(c)")) and (found := re.search(r"(\d+) files", line))
    }
    # Java 0.9's coordinator bins 50 small files per task: 100 files become 2
    assert files["(c)"] == 2
    assert files["(a)"] == 1 and 1 <= files["(b)"] < 100
    assert "(b)/(a) = " in out and "(c)/(b) = " in out

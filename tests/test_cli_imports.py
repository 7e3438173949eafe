"""The CLI answers --help without loading the engine's heavy dependencies (seconds, cold)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from dagster_paimon.cli import build_parser

HEAVY = ("pandas", "polars", "pyspark", "dagster", "pyarrow", "pypaimon")

PROBE = """
import contextlib, io, json, sys
from dagster_paimon.cli import main
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit as e:
            assert e.code == 0, (argv, e.code)
print(json.dumps(sorted({m.partition(".")[0] for m in sys.modules})))
"""


def commands() -> list[str]:
    """Every sub-command the parser knows."""
    actions = build_parser()._actions
    return sorted(next(a for a in actions if isinstance(a, argparse._SubParsersAction)).choices)


def test_help_of_every_command_loads_no_engine_dependency():
    argvs = [["--help"]] + [[c, "--help"] for c in commands()]
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argvs)],
        check=True,
        capture_output=True,
        text=True,
    )
    loaded = set(json.loads(out.stdout))
    assert "compact" in commands() and "ingest" in commands()
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))

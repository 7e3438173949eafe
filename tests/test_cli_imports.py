"""The CLI answers --help, --version and usage errors without loading the engine's heavy
dependencies (seconds, cold)."""

from __future__ import annotations

import json
import subprocess
import sys

from dagster_paimon.cli import cli

HEAVY = ("pandas", "polars", "pyspark", "dagster", "pyarrow", "pypaimon")

PROBE = """
import contextlib, io, json, sys
from dagster_paimon.cli import main
codes = []
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        codes.append(main(argv))
print(json.dumps([codes, sorted({m.partition(".")[0] for m in sys.modules})]))
"""

# each is refused before a warehouse is looked at, so nothing heavy may be imported for it
USAGE_ERRORS = [
    ["health"],
    ["health", "--warehouse", "/nonexistent", "--table", "orders"],
    ["health", "--warehouse", "/nonexistent", "--table", "db.orders", "--partition", "dt"],
    ["expire-snapshots", "--warehouse", "/nonexistent", "--table", "db.t", "--older-than", "5x"],
    ["expire-snapshots", "--warehouse", "/w", "--table", "db.t", "--retain-min", "0"],
    ["remove-orphans", "--warehouse", "/nonexistent", "--table", "db.t", "--older-than", "0"],
    ["compact", "--warehouse", "/w", "--table", "db.t", "--executor", "gpu"],
    ["tables", "--warehouse", "/w", "--table", "db.t"],
    ["--json", "nope"],
]


def commands() -> list[str]:
    """Every sub-command the CLI knows."""
    return sorted(cli.commands)


def probe(argvs: list[list[str]]) -> tuple[list[int], set[str]]:
    """Exit codes of the argument lists, run in one fresh process, and the modules it loaded."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argvs)],
        check=True,
        capture_output=True,
        text=True,
    )
    codes, loaded = json.loads(out.stdout)
    return codes, set(loaded)


def test_help_of_every_command_loads_no_engine_dependency():
    argvs = [["--help"], ["--version"]] + [[c, "--help"] for c in commands()]
    codes, loaded = probe(argvs)
    assert {"compact", "ingest", "tables"} <= set(commands())
    assert codes == [0] * len(argvs)
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_usage_errors_load_no_engine_dependency():
    codes, loaded = probe(USAGE_ERRORS)
    assert codes == [2] * len(USAGE_ERRORS)
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))

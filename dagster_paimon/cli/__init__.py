"""`dagster-paimon`: the operators' CLI over the library; JSON keys are a stable contract.

Every argument is parsed and checked by click before a command imports its engine or touches
the warehouse, so `--help`, `--version` and usage errors answer at once and a bad flag is
reported as itself, whatever else is wrong.

- `group.py`: the click group and its commands, one module per family (`health.py`,
  `compaction.py`, `ingest.py`, `maintenance.py`, `tags.py`, `consumers.py`), each command a
  few lines over the library
- `command.py`, `shared.py`: commands taking the shared flags before or after their name
- `params.py`: argument types; `session.py`: the Spark session of --executor spark and ingest
- `output.py`: the text and JSON renderers; `run.py`: `main`, exit codes by kind of failure
"""

from dagster_paimon.cli.exit_codes import (
    EXIT_CODES,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SOFTWARE,
    EXIT_TRANSIENT,
    EXIT_USAGE,
    PROG,
)
from dagster_paimon.cli.group import cli
from dagster_paimon.cli.run import main

__all__ = [
    "EXIT_CODES",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_SOFTWARE",
    "EXIT_TRANSIENT",
    "EXIT_USAGE",
    "PROG",
    "cli",
    "main",
]

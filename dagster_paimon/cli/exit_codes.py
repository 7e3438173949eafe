"""The CLI's exit codes, by what the caller can do next, and their page in `--help`."""

from __future__ import annotations

PROG = "dagster-paimon"

EXIT_OK = 0
# the operation failed: a commit conflict, corrupt metadata, an unhealthy table, an abort
EXIT_FAILURE = 1
# usage or input: a flag, an argument, a table or warehouse that is not there; nothing changed
EXIT_USAGE = 2
# sysexits' EX_SOFTWARE: an exception dagster-paimon did not expect, a bug (traceback logged)
EXIT_SOFTWARE = 70
# sysexits' EX_TEMPFAIL: the store kept failing transiently; the same command can be run again
EXIT_TRANSIENT = 75
# Ctrl-C, as shells report SIGINT
EXIT_INTERRUPTED = 130

EXIT_CODES = f"""\b
Exit codes:
  {EXIT_OK}   success
  {EXIT_FAILURE}   the operation failed (commit conflict, corrupt metadata, unhealthy table,
      maintenance aborted, an I/O error): see the message
  {EXIT_USAGE}   usage or input error (bad flag, unknown table or database, unreachable
      warehouse, option or data the table cannot take); nothing was changed
  {EXIT_SOFTWARE}  unexpected error, a bug in dagster-paimon: the traceback is logged
  {EXIT_TRANSIENT}  the store kept failing transiently; running the same command again is safe
  {EXIT_INTERRUPTED} interrupted (Ctrl-C)

\b
With --json, a result is one JSON document on stdout and an error is one JSON object,
the last line on stderr:
  {{"error": {{"type": "TableNotFoundError", "message": "...", "exit_code": 2}}}}
(a transient error adds "retry_safe" and "table_unchanged").

\b
Environment: PAIMON_WAREHOUSE (default --warehouse), PAIMON_S3_ENDPOINT,
PAIMON_S3_REGION, PAIMON_S3_PATH_STYLE, PAIMON_S3_ACCESS_KEY_ID,
PAIMON_S3_SECRET_ACCESS_KEY, PAIMON_S3_SESSION_TOKEN (flags win)."""

"""Commit users: every snapshot we commit names us, so a report can tell ours from other writers'.

A commit user is `dagster-paimon-<operation>-<uuid4>`: fresh per operation, and kept across the
retries of one commit, which find their landed snapshot by it (snapshot/resolve.py find_landed).
Paimon's Java writers use a bare uuid4 (or a Flink job's own name), never this prefix.
"""

from __future__ import annotations

import uuid

COMMIT_USER_PREFIX = "dagster-paimon-"


def new_commit_user(operation: str) -> str:
    """A fresh commit user of one operation ("ingest", "compact", ...), recognisably ours."""
    return f"{COMMIT_USER_PREFIX}{operation}-{uuid.uuid4()}"


def is_ours(commit_user: str | None) -> bool:
    """Whether a snapshot's commit user is one dagster-paimon wrote."""
    return bool(commit_user) and str(commit_user).startswith(COMMIT_USER_PREFIX)

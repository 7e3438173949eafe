"""The commands that rewrite data files: compact and rescale, locally or on Spark."""

from __future__ import annotations

from typing import Any

from dagster_paimon.cli.command import operation_command
from dagster_paimon.cli.session import on_executor, spark_flags
from dagster_paimon.cli.shared import Shared


@operation_command("compact", "dagster-paimon compact --table db.orders --full --dry-run --json")
@spark_flags
def compact(shared: Shared, spark_master: str, spark_remote: str | None, **given: Any) -> None:
    """Plan Paimon's universal compaction (or a full one) of every bucket (append tables:
    small-file compaction per bucket or per partition) and, unless --dry-run, run it and
    commit one COMPACT snapshot."""
    _rewrite(shared, spark_master, spark_remote, "compact", given)


@operation_command(
    "rescale",
    "dagster-paimon rescale --table db.orders --bucket-num 8 "
    "--partition dt=2024-01-01 --partition dt=2024-01-02",
)
@spark_flags
def rescale(shared: Shared, spark_master: str, spark_remote: str | None, **given: Any) -> None:
    """Rewrite the merged rows of the table (or of the partitions matching any --partition)
    into --bucket-num buckets and commit one OVERWRITE snapshot, as Paimon's rescale procedure
    does; it fails, nothing committed, if another writer changed those partitions meanwhile.
    A --partition matching no partition with data exits 2, nothing changed. The table's bucket
    option is not altered."""
    _rewrite(shared, spark_master, spark_remote, "rescale", given)


def _rewrite(
    shared: Shared, spark_master: str, spark_remote: str | None, method: str, given: Any
) -> None:
    """The door's `method` on the executor the flags name, its result printed."""
    result = on_executor(
        shared,
        given,
        spark_master,
        spark_remote,
        lambda table, executor: getattr(table, method)(**{**given, "executor": executor}),
    )
    shared.output.result(result)

"""Maintenance jobs per table: full compaction, expiry, manifests, orphans and the maintenance
pass, each on its schedule; rollback and rescale, which an operator launches."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dagster import (
    Config,
    DefaultScheduleStatus,
    Definitions,
    JobDefinition,
    OpExecutionContext,
    ScheduleDefinition,
    job,
    op,
)

from dagster_paimon.dagster.config import arguments, config_class
from dagster_paimon.dagster.metadata import result_metadata
from dagster_paimon.dagster.retries import retried_when_transient
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.errors import InputError, InvalidArgumentError
from dagster_paimon.maintenance.maintain import pass_options
from dagster_paimon.operations import operation
from dagster_paimon.paimon_table import PaimonTable

FullCompactionConfig = config_class("compact", leave_out=("full", "executor"))
ExpiryConfig = config_class("expire-snapshots")
ManifestCompactionConfig = config_class("compact-manifests", defaults={"full": True})
OrphanConfig = config_class("remove-orphans")
MaintainConfig = config_class("maintain", leave_out=("options",))
RollbackConfig = config_class("rollback")
RescaleConfig = config_class("rescale")
_OPERATIONS = {"full_compaction": "compact"}
"""A job's operation where the job's name is not the operation's (snake case)."""


def door(method: str) -> Callable[[Any, PaimonTable, dict[str, Any]], Any]:
    """A job's run: the door's method with the run config's keywords."""
    return lambda _resources, table, given: getattr(table, method)(**given)


@dataclass(frozen=True)
class MaintenanceCrons:
    """Default schedules: staggered so the heavy work does not overlap."""

    full_compaction: str = "0 2 * * *"
    expire_snapshots: str = "15 * * * *"
    expire_changelogs: str = "30 3 * * *"
    compact_manifests: str = "0 4 * * *"
    remove_orphans: str = "0 5 * * 0"
    maintain: str = "45 * * * *"


def _maintenance_job(
    spec: PaimonTableSpec,
    name: str,
    config_type: type[Config],
    run: Callable[[Any, PaimonTable, dict[str, Any]], Any],
    description: str,
    pool: str | None = None,
    spark: bool = False,
) -> JobDefinition:
    """One op wrapped in one job, recording the result on the op's output; `run` takes the
    op's resources, the table's front door and the door's keywords from the run config of
    operation `name` (operations.py); `spark`: it needs the Spark resource too."""
    declared = operation(_OPERATIONS.get(name, name.replace("_", "-")))

    @op(
        name=f"{spec.database}_{spec.name}_{name}_op",
        pool=pool,
        description=description,
        required_resource_keys={spec.warehouse_key, *([spec.spark_key] if spark else [])},
    )
    # dagster reads the op's config class from this annotation at run time: a variable, so no
    # static type
    def maintenance_op(context: OpExecutionContext, config: config_type) -> None:  # type: ignore[valid-type]
        warehouse = spec.warehouse(context.resources)
        given = arguments(declared, config)
        with retried_when_transient(context):
            result = run(context.resources, warehouse.table(spec.identifier), given)
        context.log.info(result.summary())
        context.add_output_metadata(result_metadata(result))

    @job(name=f"{spec.database}_{spec.name}_{name}", description=description)
    def maintenance_job() -> None:
        maintenance_op()

    return maintenance_job


def build_maintenance_definitions(
    spec: PaimonTableSpec,
    crons: MaintenanceCrons = MaintenanceCrons(),
    default_status: DefaultScheduleStatus
    | Mapping[str, DefaultScheduleStatus] = DefaultScheduleStatus.STOPPED,
    maintain_options: Mapping[str, str] | None = None,
) -> Definitions:
    """Six jobs per table, each on its own schedule, and two an operator launches: rollback
    and rescale (the rescale job needs the spec's Spark resource; a lazy one is started only
    for executor: spark).

    `default_status` is every schedule's status until it is switched in the UI: STOPPED (the
    default) or RUNNING, or a mapping from a job's kind (a MaintenanceCrons field name:
    full_compaction, expire_snapshots, expire_changelogs, compact_manifests, remove_orphans,
    maintain) to its status, kinds not named STOPPED. `maintain_options` override the
    table's options in every run of the maintain job (never written to the table); they are
    checked here against the spec's options, so a bad one fails the definitions' load:
    InvalidOptionError or InvalidArgumentError naming the table and the option.
    """
    overrides = dict(maintain_options or {})
    try:
        pass_options(spec.options, overrides)
    except InputError as e:
        raise type(e)(f"maintain options of {spec.identifier}: {e}") from e
    if isinstance(default_status, Mapping):
        unknown = sorted(set(default_status) - set(MaintenanceCrons.__dataclass_fields__))
        if unknown:
            raise InvalidArgumentError(
                f"default_status names {unknown}: the maintenance jobs are "
                f"{sorted(MaintenanceCrons.__dataclass_fields__)}"
            )
        statuses = dict(default_status)
    else:
        statuses = dict.fromkeys(MaintenanceCrons.__dataclass_fields__, default_status)

    def full_compaction(_resources, table: PaimonTable, given: dict[str, Any]):
        return table.compact(full=True, **given)

    def maintenance_pass(_resources, table: PaimonTable, given: dict[str, Any]):
        return table.maintain(options=overrides, **given)

    def rescale(resources, table: PaimonTable, given: dict[str, Any]):
        from dagster_paimon.spark.executor import executor_named

        session = lambda: getattr(resources, spec.spark_key).spark_session  # noqa: E731
        return table.rescale(**{**given, "executor": executor_named(given["executor"], session)})

    jobs = {
        "full_compaction": _maintenance_job(
            spec,
            "full_compaction",
            FullCompactionConfig,
            full_compaction,
            "Optimization compaction: every bucket into its highest level.",
            spec.pool,
        ),
        "expire_snapshots": _maintenance_job(
            spec,
            "expire_snapshots",
            ExpiryConfig,
            door("expire_snapshots"),
            "Expire snapshots by snapshot.* retention; tags, consumers and branches keep theirs.",
        ),
        "expire_changelogs": _maintenance_job(
            spec,
            "expire_changelogs",
            ExpiryConfig,
            door("expire_changelogs"),
            "Expire changelogs kept longer than snapshots (changelog.* retention).",
        ),
        "compact_manifests": _maintenance_job(
            spec,
            "compact_manifests",
            ManifestCompactionConfig,
            door("compact_manifests"),
            "Full manifest compaction: one small, DELETE-free base manifest list.",
            spec.pool,
        ),
        "remove_orphans": _maintenance_job(
            spec,
            "remove_orphans",
            OrphanConfig,
            door("remove_orphans"),
            "Remove files no snapshot, tag, changelog or branch references (older than 1 day).",
        ),
        "maintain": _maintenance_job(
            spec,
            "maintain",
            MaintainConfig,
            maintenance_pass,
            "One maintenance pass in Java's order: automatic tags, tag expiry, partition "
            "expiry, consumer expiry, snapshot expiry (steps the options do not ask for are "
            "skipped)" + (f"; overriding {', '.join(sorted(overrides))}." if overrides else "."),
        ),
    }
    launched = [
        _maintenance_job(
            spec,
            "rollback",
            RollbackConfig,
            door("rollback"),
            "Roll back to exactly one of snapshot_id, tag or timestamp: newer snapshots, "
            "changelogs and tags go, with the files only they used.",
        ),
        _maintenance_job(
            spec,
            "rescale",
            RescaleConfig,
            rescale,
            "Rewrite the table (or one partition) into bucket_num buckets in one OVERWRITE.",
            spec.pool,
            spark=True,
        ),
    ]
    schedules = [
        ScheduleDefinition(
            name=f"{job.name}_schedule",
            job=job,
            cron_schedule=getattr(crons, kind),
            default_status=statuses.get(kind, DefaultScheduleStatus.STOPPED),
        )
        for kind, job in jobs.items()
    ]
    return Definitions(jobs=[*jobs.values(), *launched], schedules=schedules)

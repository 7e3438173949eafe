"""Maintenance jobs and schedules per table: full compaction, expiry, manifests, orphans."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
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
from pydantic import Field

from dagster_paimon.dagster.metadata import metric_metadata
from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.dagster.retries import retried_when_transient
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.errors import InvalidArgumentError
from dagster_paimon.lsm.compaction import compact_open_table
from dagster_paimon.maintenance.expire import expire_changelogs, expire_snapshots
from dagster_paimon.maintenance.maintain import maintain
from dagster_paimon.maintenance.manifests import compact_manifests
from dagster_paimon.maintenance.orphans import remove_orphans
from dagster_paimon.options import duration_ms


def duration(text: str) -> timedelta:
    """A Paimon duration ('1 h', '30min', '2d') from run config, as the library takes it."""
    return timedelta(milliseconds=duration_ms(text))


class FullCompactionConfig(Config):
    """Optimization compaction: every bucket of the table into its highest level."""

    partition: dict[str, str] | None = Field(
        default=None, description="Only this Paimon partition (K: V); all when unset."
    )


class ExpiryConfig(Config):
    """Overrides of the table's retention options for one run; unset keeps the table's value."""

    retain_min: int | None = None
    retain_max: int | None = None
    older_than: str | None = Field(default=None, description="Keep snapshots newer than this.")
    max_deletes: int | None = None
    dry_run: bool = False

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of expire_snapshots and expire_changelogs."""
        return {
            "older_than": duration(self.older_than) if self.older_than else None,
            "retain_min": self.retain_min,
            "retain_max": self.retain_max,
            "max_deletes": self.max_deletes,
            "dry_run": self.dry_run,
        }


class ManifestCompactionConfig(Config):
    """Full manifest compaction by default, as the schedule's purpose is to reset the list."""

    full: bool = True
    dry_run: bool = False


class OrphanConfig(Config):
    """Only files older than this are orphans; never anything a running writer may still use."""

    older_than: str = "1 d"
    dry_run: bool = False


class MaintainConfig(Config):
    """One maintenance pass as the table's options configure it (no per-step overrides)."""

    dry_run: bool = Field(default=False, description="Report each step, change nothing.")


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
    run: Callable[[PaimonWarehouse, Any, Any], Any],
    description: str,
    pool: str | None = None,
) -> JobDefinition:
    """One op wrapped in one job, recording the result's metrics on the op's output."""

    @op(
        name=f"{spec.database}_{spec.name}_{name}_op",
        pool=pool,
        description=description,
        required_resource_keys={spec.warehouse_key},
    )
    # dagster reads the op's config class from this annotation at run time: a variable, so no
    # static type
    def maintenance_op(context: OpExecutionContext, config: config_type) -> None:  # type: ignore[valid-type]
        warehouse = spec.warehouse(context.resources)
        with retried_when_transient(context):
            table = warehouse.open_table(spec.identifier)
            result = run(warehouse, table, config)
        context.log.info(result.summary())
        context.add_output_metadata(metric_metadata(result.metrics()))

    @job(name=f"{spec.database}_{spec.name}_{name}", description=description)
    def maintenance_job() -> None:
        maintenance_op()

    return maintenance_job


def build_maintenance_definitions(
    spec: PaimonTableSpec,
    crons: MaintenanceCrons = MaintenanceCrons(),
    default_status: DefaultScheduleStatus
    | Mapping[str, DefaultScheduleStatus] = DefaultScheduleStatus.STOPPED,
) -> Definitions:
    """Six jobs per table, each on its own schedule.

    `default_status` is every schedule's status until it is switched in the UI: STOPPED (the
    default) or RUNNING, or a mapping from a job's kind (a MaintenanceCrons field name:
    full_compaction, expire_snapshots, expire_changelogs, compact_manifests, remove_orphans,
    maintain) to its status, kinds not named STOPPED.
    """
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

    def full_compaction(warehouse: PaimonWarehouse, table, config: FullCompactionConfig):
        return compact_open_table(
            table, warehouse.table_ref(spec.identifier), full=True, partition=config.partition
        )

    def snapshots(_warehouse: PaimonWarehouse, table, config: ExpiryConfig):
        return expire_snapshots(table, **config.arguments())

    def changelogs(_warehouse: PaimonWarehouse, table, config: ExpiryConfig):
        return expire_changelogs(table, **config.arguments())

    def manifests(_warehouse: PaimonWarehouse, table, config: ManifestCompactionConfig):
        return compact_manifests(table, full=config.full, dry_run=config.dry_run)

    def orphans(_warehouse: PaimonWarehouse, table, config: OrphanConfig):
        return remove_orphans(table, older_than=duration(config.older_than), dry_run=config.dry_run)

    def maintenance_pass(_warehouse: PaimonWarehouse, table, config: MaintainConfig):
        return maintain(table, dry_run=config.dry_run)

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
            snapshots,
            "Expire snapshots by snapshot.* retention; tags, consumers and branches keep theirs.",
        ),
        "expire_changelogs": _maintenance_job(
            spec,
            "expire_changelogs",
            ExpiryConfig,
            changelogs,
            "Expire changelogs kept longer than snapshots (changelog.* retention).",
        ),
        "compact_manifests": _maintenance_job(
            spec,
            "compact_manifests",
            ManifestCompactionConfig,
            manifests,
            "Full manifest compaction: one small, DELETE-free base manifest list.",
            spec.pool,
        ),
        "remove_orphans": _maintenance_job(
            spec,
            "remove_orphans",
            OrphanConfig,
            orphans,
            "Remove files no snapshot, tag, changelog or branch references (older than 1 day).",
        ),
        "maintain": _maintenance_job(
            spec,
            "maintain",
            MaintainConfig,
            maintenance_pass,
            "One maintenance pass in Java's order: automatic tags, tag expiry, partition "
            "expiry, consumer expiry, snapshot expiry (steps the table's options do not ask "
            "for are skipped).",
        ),
    }
    schedules = [
        ScheduleDefinition(
            name=f"{job.name}_schedule",
            job=job,
            cron_schedule=getattr(crons, kind),
            default_status=statuses.get(kind, DefaultScheduleStatus.STOPPED),
        )
        for kind, job in jobs.items()
    ]
    return Definitions(jobs=list(jobs.values()), schedules=schedules)

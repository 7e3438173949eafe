"""Maintenance jobs per table: full compaction, expiry, manifests, orphans and the maintenance
pass, each on its schedule; rollback and rescale, which an operator launches."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

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

from dagster_paimon.dagster.metadata import result_metadata
from dagster_paimon.dagster.retries import retried_when_transient
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.errors import InputError, InvalidArgumentError
from dagster_paimon.kinds import compact_open_table
from dagster_paimon.lsm.compaction import rescale_open_table
from dagster_paimon.maintenance.expire import expire_changelogs, expire_snapshots
from dagster_paimon.maintenance.maintain import maintain, pass_options
from dagster_paimon.maintenance.manifests import compact_manifests
from dagster_paimon.maintenance.orphans import remove_orphans
from dagster_paimon.maintenance.rollback import rollback_to
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
    """One maintenance pass as the table's options (and the definitions' overrides) ask."""

    dry_run: bool = Field(default=False, description="Report each step, change nothing.")


class RollbackConfig(Config):
    """Roll back to exactly one target; newer snapshots, changelogs and tags are removed."""

    snapshot_id: int | None = Field(default=None, description="Roll back to this snapshot.")
    tag: str | None = Field(default=None, description="Roll back to the snapshot of this tag.")
    timestamp: str | None = Field(
        default=None,
        description="Roll back to the newest snapshot committed at or before this ISO time "
        "(without an offset: UTC), e.g. 2024-05-01T12:00:00.",
    )
    dry_run: bool = Field(default=False, description="Report what would go, change nothing.")

    def at(self) -> datetime | None:
        """The timestamp as the library takes it."""
        if self.timestamp is None:
            return None
        try:
            return datetime.fromisoformat(self.timestamp)
        except ValueError as e:
            raise InvalidArgumentError(f"timestamp {self.timestamp!r} is not an ISO time") from e


class RescaleConfig(Config):
    """Rewrite the table (or some partitions) into a new number of buckets, in one snapshot."""

    bucket_num: int = Field(description="The new number of buckets (>= 1).")
    partitions: list[dict[str, str]] | None = Field(
        default=None,
        description="Only the Paimon partitions matching any of these specs (K: V over some or "
        "all partition keys); the whole table if unset.",
    )
    executor: Literal["local", "spark"] = Field(
        default="local", description="Rewrite in this process or on the Spark resource."
    )
    dry_run: bool = Field(default=False, description="Report the plan, change nothing.")


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
    run: Callable[[Any, Any, Any], Any],
    description: str,
    pool: str | None = None,
    spark: bool = False,
) -> JobDefinition:
    """One op wrapped in one job, recording the result on the op's output; `run`
    takes the op's resources, the open table and the config; `spark`: it needs the Spark
    resource too."""

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
        with retried_when_transient(context):
            table = warehouse.open_table(spec.identifier)
            result = run(context.resources, table, config)
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

    def full_compaction(resources, table, config: FullCompactionConfig):
        ref = spec.warehouse(resources).table_ref(spec.identifier)
        return compact_open_table(table, ref, full=True, partition=config.partition)

    def snapshots(_resources, table, config: ExpiryConfig):
        return expire_snapshots(table, **config.arguments())

    def changelogs(_resources, table, config: ExpiryConfig):
        return expire_changelogs(table, **config.arguments())

    def manifests(_resources, table, config: ManifestCompactionConfig):
        return compact_manifests(table, full=config.full, dry_run=config.dry_run)

    def orphans(_resources, table, config: OrphanConfig):
        return remove_orphans(table, older_than=duration(config.older_than), dry_run=config.dry_run)

    def maintenance_pass(_resources, table, config: MaintainConfig):
        return maintain(table, options=overrides, dry_run=config.dry_run)

    def rollback(_resources, table, config: RollbackConfig):
        return rollback_to(
            table,
            snapshot_id=config.snapshot_id,
            tag=config.tag,
            timestamp=config.at(),
            dry_run=config.dry_run,
        )

    def rescale(resources, table, config: RescaleConfig):
        executor = None
        if config.executor == "spark":
            from dagster_paimon.spark.executor import SparkExecutor

            executor = SparkExecutor(getattr(resources, spec.spark_key).spark_session)
        return rescale_open_table(
            table,
            spec.warehouse(resources).table_ref(spec.identifier),
            bucket_num=config.bucket_num,
            partitions=config.partitions,
            executor=executor,
            dry_run=config.dry_run,
        )

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
            "expiry, consumer expiry, snapshot expiry (steps the options do not ask for are "
            "skipped)" + (f"; overriding {', '.join(sorted(overrides))}." if overrides else "."),
        ),
    }
    launched = [
        _maintenance_job(
            spec,
            "rollback",
            RollbackConfig,
            rollback,
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

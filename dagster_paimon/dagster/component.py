"""PaimonWarehouseComponent: adopt the tables a warehouse already holds, in YAML.

A state-backed Dagster component. Refreshing its state (`dg utils refresh-defs-state`, or a
`dg`/`dagster dev` load) lists the warehouse once (`dagster_paimon.discovery`) and stores the
tables found; loading the code location builds from that state without touching the
warehouse. Its resources have keys of their own (`paimon_warehouse_<hash of the URI>`), so
it sits next to Python-declared tables in one code location. Each adopted table gets the same
definitions as a Python-declared one, from the same builders: an external asset `<db>/<table>`
(its rows are written elsewhere) with its column schema, the `<db>/<table>/compaction` asset
and its job, the `lsm_health` check, the maintenance jobs and schedules (the maintenance pass
reading `maintain.options` and `maintain.tables.<db.table>.options` over the table's own), and
the rollback and rescale jobs an operator launches. Paimon partitions
become dynamic partitions, which the component's one sensor adds as they appear; each tick it
also records every table's health as an observation and requests compaction of exactly the
partitions over Paimon's triggers.

Patterns (and `tables.kinds`) that match no table fail the refresh (a typo fails loudly) unless
`tables.allow_empty` is true: then a warning, and no definitions until a refresh finds one.
Every YAML field carries a description and examples in the component's schema.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import dagster as dg
from dagster import ComponentFormConfig
from dagster.components import (
    DefsStateConfig,
    DefsStateConfigArgs,
    Scaffolder,
    ScaffoldRequest,
    StateBackedComponent,
    scaffold_with,
)
from dagster.components.component_scaffolding import scaffold_component
from dagster_pyspark import LazyPySparkResource
from dagster_shared.serdes.objects.models.defs_state_info import DefsStateManagementType
from pydantic import BaseModel, Field

from dagster_paimon.dagster.checks import build_health_check
from dagster_paimon.dagster.compaction import CompactionConfig, build_compaction_asset
from dagster_paimon.dagster.factory import compaction_job_name
from dagster_paimon.dagster.maintenance import MaintenanceCrons, build_maintenance_definitions
from dagster_paimon.dagster.metadata import column_schema
from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.dagster.sensors import build_warehouse_sensor
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.discovery import DiscoveredTable, Discovery, discover_tables
from dagster_paimon.errors import InvalidArgumentError, TableNotFoundError
from dagster_paimon.operations import EXECUTOR, ExecutorName
from dagster_paimon.partition import parse_partition_spec

DEFAULTS = MaintenanceCrons()
ScheduleStatus = Literal["RUNNING", "STOPPED"]
TableKind = Literal["primary-key", "append"]


def described(description: str, *examples: Any) -> dg.Resolver:
    """A YAML field's description and examples, as the component's schema shows them (`dg`,
    the UI, editors); Dagster drops those a pydantic Field gives a field with a default."""
    return dg.Resolver.default(description=description, examples=list(examples))


class S3Args(dg.Resolvable, dg.Model):
    """How to reach an S3-compatible store; credentials come from the environment (boto3)."""

    endpoint: Annotated[
        str | None,
        described(
            "Endpoint URL of an S3-compatible store (MinIO, moto, ...); unset for AWS S3.",
            "http://minio:9000",
        ),
    ] = None
    region: Annotated[
        str | None,
        described("Region of the bucket; unset leaves it to boto3's configuration.", "eu-west-1"),
    ] = None
    path_style: Annotated[
        bool,
        described(
            "Address buckets by path (endpoint/bucket/key), as MinIO and most self-hosted "
            "stores need; AWS uses virtual-hosted buckets (false).",
            True,
        ),
    ] = False


class WarehouseArgs(dg.Resolvable, dg.Model):
    """The warehouse: a local path or s3://bucket/prefix."""

    uri: Annotated[
        str,
        described(
            "Warehouse location: a local path or s3://bucket/prefix (s3a://, s3n:// too).",
            "{{ env('PAIMON_WAREHOUSE') }}",
            "s3://lake/warehouse",
            "/data/warehouse",
        ),
    ]
    s3: Annotated[
        S3Args | None,
        described(
            "How to reach an S3 warehouse; credentials always come from boto3's chain "
            "(environment, profile, role), never from this file.",
            {"endpoint": "http://minio:9000", "region": "us-east-1", "path_style": True},
        ),
    ] = None
    catalog_options: Annotated[
        dict[str, str],
        described(
            "Extra pypaimon catalog options, passed through; secrets are refused (the UI "
            "would show them): credentials come from boto3's chain.",
            {"fs.s3.connection.maximum": "64"},
        ),
    ] = Field(default_factory=dict)

    def resource(self) -> PaimonWarehouse:
        """The `warehouse` resource every definition of the component uses."""
        s3 = self.s3 or S3Args()
        return PaimonWarehouse(
            uri=str(self.uri),
            s3_endpoint=s3.endpoint,
            s3_region=s3.region,
            s3_path_style=bool(s3.path_style),
            catalog_options={str(k): str(v) for k, v in self.catalog_options.items()},
        )


class TablesArgs(dg.Resolvable, dg.Model):
    """Which tables to adopt: shell patterns over `db.table` (all when include is empty)."""

    include: Annotated[
        list[str],
        described(
            "Shell patterns over `db.table` naming the tables to adopt; empty adopts every "
            "table of the warehouse of the kinds asked for.",
            ["pos.*"],
            ["sales.orders", "crm.*"],
        ),
    ] = Field(default_factory=list)
    exclude: Annotated[
        list[str],
        described(
            "Shell patterns over `db.table` of tables not to adopt, though included.",
            ["*.tmp_*"],
        ),
    ] = Field(default_factory=list)
    kinds: Annotated[
        list[TableKind],
        described(
            "Which kinds of table to adopt: `primary-key` (LSM compaction) and `append` (tables "
            "without a primary key: small-file compaction). Both by default.",
            ["primary-key"],
            ["primary-key", "append"],
        ),
    ] = Field(default_factory=lambda: list(get_args(TableKind)), min_length=1)
    allow_empty: Annotated[
        bool,
        described(
            "What a warehouse with no table matching include/exclude and kinds means. "
            "false (the default): an error naming the patterns, so a typo fails the load "
            "loudly. true: a warning, and the component defines nothing until a refresh "
            "finds a table (a local warehouse directory not created yet counts as empty; "
            "an unreachable S3 warehouse is still an error). For deployments meant to load "
            "before the tables exist, such as an example or a fresh environment.",
            True,
        ),
    ] = False


class CompactionArgs(dg.Resolvable, dg.Model):
    """Compaction of adopted tables: the sensor, where rewrites run, the full-compaction cron."""

    sensor: Annotated[
        bool,
        described(
            "Run the component's sensor: it adds Paimon partitions as dynamic partitions, "
            "records each table's health and requests compaction of the partitions over "
            "Paimon's triggers.",
            True,
        ),
    ] = True
    sensor_interval_seconds: Annotated[
        int, described("Seconds between two ticks of the sensor.", 60, 300)
    ] = 60
    executor: Annotated[
        ExecutorName,
        described(
            f"{EXECUTOR.help[0].upper()}{EXECUTOR.help[1:]}: local (threads of the run's "
            "process) or spark (tasks of the Spark session spark_conf describes).",
            *EXECUTOR.choices,
        ),
    ] = EXECUTOR.default
    spark_conf: Annotated[
        dict[str, str],
        described(
            "Spark settings for executor: spark (default master local[*]; spark.remote: "
            "sc://host:port for a Spark Connect server).",
            {"spark.master": "spark://spark-master:7077"},
            {"spark.remote": "sc://spark-connect:15002"},
        ),
    ] = Field(default_factory=dict)
    full_cron: Annotated[
        str,
        described(
            "Cron of each table's full-compaction job (every bucket into its highest level).",
            DEFAULTS.full_compaction,
        ),
    ] = DEFAULTS.full_compaction
    full_default_status: Annotated[
        ScheduleStatus,
        described(
            "Status of the full-compaction schedules until switched in the UI: STOPPED "
            "(the default) or RUNNING.",
            "RUNNING",
        ),
    ] = "STOPPED"

    def spark(self) -> LazyPySparkResource:
        """A Spark session started only when a compaction runs on Spark."""
        local = {"spark.master": "local[*]", "spark.pyspark.python": sys.executable}
        # pyspark refuses a master beside a Connect URL; a Connect server has its own Python.
        conf = {} if "spark.remote" in self.spark_conf else local
        return LazyPySparkResource(spark_config={**conf, **self.spark_conf})


class ScheduleArgs(dg.Resolvable, dg.Model):
    """A maintenance job's schedule: its cron, and whether it runs before switched on."""

    cron: Annotated[
        str | None,
        described("Cron of the job's schedule; unset keeps the job's default.", "15 * * * *"),
    ] = None
    default_status: Annotated[
        ScheduleStatus,
        described(
            "Status of the schedule until switched in the UI: STOPPED (the default) or RUNNING.",
            "RUNNING",
        ),
    ] = "STOPPED"


class MaintainTableArgs(dg.Resolvable, dg.Model):
    """One table's settings of its maintenance pass."""

    options: Annotated[
        dict[str, str],
        described(
            "Options this table's maintenance pass reads instead of the table's own (and of "
            "maintain.options), for every run; the table's schema is not changed.",
            {"partition.expiration-time": "30 d", "tag.num-retained-max": "14"},
        ),
    ] = Field(default_factory=dict)


class MaintainArgs(ScheduleArgs):
    """The maintenance pass: its schedule, and options overriding the tables' for its runs."""

    options: Annotated[
        dict[str, str],
        described(
            "Options every adopted table's maintenance pass reads instead of the table's own "
            "(never written to the table): the tag.*, partition.*, consumer.*, snapshot.* and "
            "changelog.* retention options its steps read. An unknown key or a malformed "
            "value fails the load, naming the table and the option.",
            {"partition.expiration-time": "90 d", "tag.automatic-creation": "process-time"},
            {"snapshot.num-retained.max": "100", "consumer.expiration-time": "7 d"},
        ),
    ] = Field(default_factory=dict)
    tables: Annotated[
        dict[str, MaintainTableArgs],
        described(
            "Per adopted table (`db.table`), options that beat maintain.options and the "
            "table's own; naming a table the component does not adopt fails the load.",
            {"sales.orders": {"options": {"partition.expiration-time": "365 d"}}},
        ),
    ] = Field(default_factory=dict)

    def overrides(self, identifier: str) -> dict[str, str]:
        """The options one table's pass reads instead of its own."""
        table = self.tables.get(identifier)
        return {**self.options, **(table.options if table else {})}


class StateArgs(DefsStateConfigArgs):
    """Where the list of adopted tables is kept (Dagster's state-backed component settings)."""

    key: str | None = Field(
        default=None,
        description="Key of the state, unique per deployment; default "
        "PaimonWarehouseComponent[<warehouse uri>].",
        examples=["PaimonWarehouseComponent[s3://lake/warehouse]"],
    )
    management_type: DefsStateManagementType = Field(
        description="Where the state is kept. LOCAL_FILESYSTEM: beside the project, written by "
        "`dg utils refresh-defs-state` (or resources/refresh_state.py) before the code "
        "location loads, and by `dagster dev` as it loads; VERSIONED_STATE_STORAGE: in the "
        "instance's defs_state_storage, refreshed at any time; LEGACY_CODE_SERVER_SNAPSHOTS: "
        "in memory, listed whenever the code server starts.",
        examples=[t.value for t in DefsStateManagementType],
    )
    refresh_if_dev: bool = Field(
        default=True,
        description="List the warehouse again whenever `dagster dev` or `dg` loads the project.",
        examples=[True],
    )


class ScaffoldParams(BaseModel):
    """`dg scaffold defs dagster_paimon.PaimonWarehouseComponent <path> --uri ...`."""

    uri: str | None = None


class PaimonWarehouseScaffolder(Scaffolder[ScaffoldParams]):
    """A defs.yaml adopting every table, the warehouse from PAIMON_WAREHOUSE."""

    @classmethod
    def get_scaffold_params(cls) -> type[ScaffoldParams]:
        """The scaffold command's options."""
        return ScaffoldParams

    def scaffold(self, request: ScaffoldRequest[ScaffoldParams]) -> None:
        """Write defs.yaml with the defaults spelled out, ready to edit."""
        uri = request.params.uri if request.params else None
        scaffold_component(
            request,
            {
                "warehouse": {"uri": uri or "{{ env('PAIMON_WAREHOUSE') }}"},
                "tables": {"include": ["*"], "exclude": [], "allow_empty": False},
                "compaction": {
                    "sensor": True,
                    "executor": "local",
                    "full_cron": DEFAULTS.full_compaction,
                    "full_default_status": "STOPPED",
                },
                **{
                    kind: {"cron": getattr(DEFAULTS, kind), "default_status": "STOPPED"}
                    for kind in (
                        "expire_snapshots",
                        "expire_changelogs",
                        "compact_manifests",
                        "remove_orphans",
                        "maintain",
                    )
                },
            },
        )


@scaffold_with(PaimonWarehouseScaffolder)
class PaimonWarehouseComponent(StateBackedComponent, dg.Model, dg.Resolvable):
    """Adopts the tables of a Paimon warehouse: compaction, health, maintenance."""

    warehouse: Annotated[
        WarehouseArgs,
        described(
            "The warehouse whose tables are adopted, and how to reach it.",
            {"uri": "{{ env('PAIMON_WAREHOUSE') }}"},
            {"uri": "s3://lake/warehouse", "s3": {"region": "eu-west-1"}},
        ),
    ]
    tables: Annotated[
        TablesArgs,
        described(
            "Which tables to adopt (by name and kind), and whether finding none is an error.",
            {"include": ["pos.*"], "exclude": ["*.tmp_*"]},
            {"include": ["pos.*"], "allow_empty": True},
        ),
    ] = Field(default_factory=TablesArgs)
    compaction: Annotated[
        CompactionArgs,
        described(
            "Compaction of the adopted tables: the sensor, the executor, the full compaction.",
            {"sensor": True, "sensor_interval_seconds": 30, "executor": "local"},
        ),
    ] = Field(default_factory=CompactionArgs)
    expire_snapshots: Annotated[
        ScheduleArgs,
        described(
            "Schedule of each table's snapshot expiry (its snapshot.* retention options).",
            {"cron": DEFAULTS.expire_snapshots, "default_status": "RUNNING"},
        ),
    ] = Field(default_factory=ScheduleArgs)
    expire_changelogs: Annotated[
        ScheduleArgs,
        described(
            "Schedule of each table's expiry of changelogs kept longer than snapshots.",
            {"cron": DEFAULTS.expire_changelogs},
        ),
    ] = Field(default_factory=ScheduleArgs)
    compact_manifests: Annotated[
        ScheduleArgs,
        described(
            "Schedule of each table's full manifest compaction.",
            {"cron": DEFAULTS.compact_manifests},
        ),
    ] = Field(default_factory=ScheduleArgs)
    remove_orphans: Annotated[
        ScheduleArgs,
        described(
            "Schedule of each table's removal of files no snapshot, tag or branch uses.",
            {"cron": DEFAULTS.remove_orphans, "default_status": "STOPPED"},
        ),
    ] = Field(default_factory=ScheduleArgs)
    maintain: Annotated[
        MaintainArgs,
        described(
            "Schedule of each table's maintenance pass (automatic tags, tag, partition, "
            "consumer and snapshot expiry, as the table's options ask), and options that "
            "override the tables' for its runs, for all tables or per table.",
            {"cron": DEFAULTS.maintain, "default_status": "RUNNING"},
            {
                "options": {"partition.expiration-time": "90 d"},
                "tables": {"sales.orders": {"options": {"partition.expiration-time": "365 d"}}},
            },
        ),
    ] = Field(default_factory=MaintainArgs)
    defs_state: Annotated[
        StateArgs,
        dg.Resolver.default(
            description="Where the list of adopted tables is kept between loads (Dagster's "
            "state-backed component settings); default: beside the project.",
            examples=[{"management_type": "LOCAL_FILESYSTEM"}],
            form_config=ComponentFormConfig(hidden=True),
        ),
    ] = Field(
        default_factory=lambda: StateArgs(management_type=DefsStateManagementType.LOCAL_FILESYSTEM)
    )

    @property
    def defs_state_config(self) -> DefsStateConfig:
        """One state per warehouse URI."""
        return DefsStateConfig.from_args(
            self.defs_state, default_key=f"PaimonWarehouseComponent[{self.warehouse.uri}]"
        )

    def write_state_to_path(self, state_path: Path) -> None:
        """List the warehouse and store the tables found, atomically.

        Raises WarehouseUnreachableError, TableNotFoundError (no table matches
        tables.include/exclude/kinds).
        """
        resource = self.warehouse.resource()
        try:
            found = discover_tables(
                resource.uri,
                resource.paimon_options(),
                include=self.tables.include,
                exclude=self.tables.exclude,
                allow_empty=self.tables.allow_empty,
                kinds=self.tables.kinds,
            )
        except TableNotFoundError as e:
            raise TableNotFoundError(
                f"{e}. Check tables.include/exclude/kinds; to load with no table adopted until one "
                "exists, set tables.allow_empty: true"
            ) from e
        state_path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=state_path.parent, prefix=".state-")
        with os.fdopen(fd, "w") as out:
            out.write(found.to_json())
        os.replace(temp, state_path)

    def build_defs_from_state(
        self, context: dg.ComponentLoadContext, state_path: Path | None
    ) -> dg.Definitions:
        """Every adopted table's definitions and the one sensor, from the stored state."""
        if state_path is None:
            return dg.Definitions()
        discovery = Discovery.from_json(state_path.read_text())
        if not discovery.tables:  # allow_empty: the refresh logged it
            return dg.Definitions()
        crons = MaintenanceCrons(
            full_compaction=self.compaction.full_cron,
            expire_snapshots=self.expire_snapshots.cron or DEFAULTS.expire_snapshots,
            expire_changelogs=self.expire_changelogs.cron or DEFAULTS.expire_changelogs,
            compact_manifests=self.compact_manifests.cron or DEFAULTS.compact_manifests,
            remove_orphans=self.remove_orphans.cron or DEFAULTS.remove_orphans,
            maintain=self.maintain.cron or DEFAULTS.maintain,
        )
        statuses = {
            "full_compaction": dg.DefaultScheduleStatus(self.compaction.full_default_status),
            **{
                kind: dg.DefaultScheduleStatus(getattr(self, kind).default_status)
                for kind in (
                    "expire_snapshots",
                    "expire_changelogs",
                    "compact_manifests",
                    "remove_orphans",
                    "maintain",
                )
            },
        }
        adopted = sorted(t.identifier for t in discovery.tables)
        strangers = sorted(set(self.maintain.tables) - set(adopted))
        if strangers:
            raise InvalidArgumentError(
                f"maintain.tables names {strangers}, which the component does not adopt "
                f"(adopted: {adopted})"
            )
        tag = f"{zlib.crc32(self.warehouse.uri.encode()):08x}"
        keys = {"warehouse_key": f"paimon_warehouse_{tag}", "spark_key": f"paimon_spark_{tag}"}
        parts = []
        watched = []
        for table in discovery.tables:
            spec = replace(
                adopted_spec(table),
                warehouse_key=keys["warehouse_key"],
                spark_key=keys["spark_key"],
            )
            compaction = build_compaction_asset(spec)
            job = dg.define_asset_job(
                compaction_job_name(spec),
                selection=[spec.compaction_asset_key],
                config={
                    "ops": {
                        compaction.op.name: {
                            "config": CompactionConfig(
                                executor=self.compaction.executor
                            ).model_dump()
                        }
                    }
                },
            )
            watched.append((spec, job))
            parts.append(
                dg.Definitions(
                    assets=[external_asset(spec), compaction],
                    asset_checks=[build_health_check(spec)],
                    jobs=[job],
                )
            )
            overrides = self.maintain.overrides(table.identifier)
            parts.append(build_maintenance_definitions(spec, crons, statuses, overrides))
        if self.compaction.sensor and watched:
            name = f"paimon_warehouse_sensor_{tag}"
            parts.append(
                dg.Definitions(
                    sensors=[
                        build_warehouse_sensor(
                            name, watched, self.compaction.sensor_interval_seconds
                        )
                    ]
                )
            )
        resources = {
            keys["warehouse_key"]: self.warehouse.resource(),
            keys["spark_key"]: self.compaction.spark(),
        }
        return dg.Definitions.merge(*parts, dg.Definitions(resources=resources))


def adopted_spec(table: DiscoveredTable) -> PaimonTableSpec:
    """The spec of an adopted table: its partitions are dynamic, keyed `k=v[,k=v]`."""
    partitioned = bool(table.partition_keys)
    return PaimonTableSpec(
        database=table.database,
        name=table.name,
        schema=table.schema,
        primary_keys=table.primary_keys,
        bucket=table.bucket,
        partition_keys=table.partition_keys,
        options=dict(table.options),
        partitions_def=(
            dg.DynamicPartitionsDefinition(name=f"paimon_{table.database}_{table.name}")
            if partitioned
            else None
        ),
        partition_mapping=(lambda key: parse_partition_spec(key) or {}) if partitioned else None,
        description=f"Paimon table {table.identifier}, written outside Dagster.",
    )


def external_asset(spec: PaimonTableSpec) -> dg.AssetSpec:
    """The table itself: observed, not materialized here."""
    return dg.AssetSpec(
        key=spec.asset_key,
        description=spec.description,
        group_name=spec.database,
        kinds={"paimon"},
        partitions_def=spec.partitions_def,
        metadata={
            "dagster/column_schema": column_schema(spec.schema, spec.primary_keys),
            "paimon/identifier": spec.identifier,
            "paimon/bucket": spec.bucket,
        },
    )

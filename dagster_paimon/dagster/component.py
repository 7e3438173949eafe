"""PaimonWarehouseComponent: adopt the primary-key tables a warehouse already holds, in YAML.

A state-backed Dagster component. Refreshing its state (`dg utils refresh-defs-state`, or a
`dg`/`dagster dev` load) lists the warehouse once (`dagster_paimon.discovery`) and stores the
tables found; loading the code location builds from that state without touching the
warehouse. Its resources have keys of their own (`paimon_warehouse_<hash of the URI>`), so
it sits next to Python-declared tables in one code location. Each adopted table gets the same
definitions as a Python-declared one, from the same builders: an external asset `<db>/<table>`
(its rows are written elsewhere) with its column schema, the `<db>/<table>/compaction` asset
and its job, the `lsm_health` check, and the maintenance jobs and schedules. Paimon partitions
become dynamic partitions, which the component's one sensor adds as they appear; each tick it
also records every table's health as an observation and requests compaction of exactly the
partitions over Paimon's triggers.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Literal

import dagster as dg
from dagster.components import (
    DefsStateConfig,
    DefsStateConfigArgs,
    ResolvedDefsStateConfig,
    Scaffolder,
    ScaffoldRequest,
    StateBackedComponent,
    scaffold_with,
)
from dagster.components.component_scaffolding import scaffold_component
from dagster_pyspark import LazyPySparkResource
from pydantic import BaseModel, Field

from dagster_paimon.dagster.checks import build_lsm_health_check
from dagster_paimon.dagster.compaction import CompactionConfig, build_compaction_asset
from dagster_paimon.dagster.factory import compaction_job_name
from dagster_paimon.dagster.maintenance import MaintenanceCrons, build_maintenance_definitions
from dagster_paimon.dagster.metadata import column_schema
from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.dagster.sensors import build_warehouse_sensor
from dagster_paimon.dagster.specs import PaimonTableSpec
from dagster_paimon.discovery import DiscoveredTable, Discovery, discover_tables
from dagster_paimon.partition import parse_partition_spec

DEFAULTS = MaintenanceCrons()


class S3Args(dg.Resolvable, dg.Model):
    """How to reach an S3-compatible store; credentials come from the environment (boto3)."""

    endpoint: str | None = Field(default=None, description="Endpoint of an S3-compatible store.")
    region: str | None = None
    path_style: bool = Field(default=False, description="Address buckets by path (MinIO, moto).")


class WarehouseArgs(dg.Resolvable, dg.Model):
    """The warehouse: a local path or s3://bucket/prefix."""

    uri: str
    s3: S3Args | None = None
    catalog_options: dict[str, str] = Field(
        default_factory=dict,
        description="Extra pypaimon catalog options; secrets are refused (the UI would show "
        "them): credentials come from boto3's chain.",
    )

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

    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)


class CompactionArgs(dg.Resolvable, dg.Model):
    """Compaction of adopted tables: the sensor, where rewrites run, the full-compaction cron."""

    sensor: bool = True
    sensor_interval_seconds: int = 60
    executor: Literal["local", "spark"] = "local"
    spark_conf: dict[str, str] = Field(
        default_factory=dict,
        description="Spark settings for executor: spark (default master local[*]; "
        "spark.remote: sc://host:port for a Spark Connect server).",
    )
    full_cron: str = DEFAULTS.full_compaction

    def spark(self) -> LazyPySparkResource:
        """A Spark session started only when a compaction runs on Spark."""
        local = {"spark.master": "local[*]", "spark.pyspark.python": sys.executable}
        # pyspark refuses a master beside a Connect URL; a Connect server has its own Python.
        conf = {} if "spark.remote" in self.spark_conf else local
        return LazyPySparkResource(spark_config={**conf, **self.spark_conf})


class ScheduleArgs(dg.Resolvable, dg.Model):
    """A maintenance job's schedule (stopped until switched on in the UI)."""

    cron: str


class ScaffoldParams(BaseModel):
    """`dg scaffold defs dagster_paimon.PaimonWarehouseComponent <path> --uri ...`."""

    uri: str | None = None


class PaimonWarehouseScaffolder(Scaffolder[ScaffoldParams]):
    """A defs.yaml adopting every primary-key table, the warehouse from PAIMON_WAREHOUSE."""

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
                "tables": {"include": ["*"], "exclude": []},
                "compaction": {
                    "sensor": True,
                    "executor": "local",
                    "full_cron": DEFAULTS.full_compaction,
                },
                "expire_snapshots": {"cron": DEFAULTS.expire_snapshots},
                "expire_changelogs": {"cron": DEFAULTS.expire_changelogs},
                "compact_manifests": {"cron": DEFAULTS.compact_manifests},
                "remove_orphans": {"cron": DEFAULTS.remove_orphans},
            },
        )


@scaffold_with(PaimonWarehouseScaffolder)
class PaimonWarehouseComponent(StateBackedComponent, dg.Model, dg.Resolvable):
    """Adopts the primary-key tables of a Paimon warehouse: compaction, health, maintenance."""

    warehouse: WarehouseArgs
    tables: TablesArgs = Field(default_factory=TablesArgs)
    compaction: CompactionArgs = Field(default_factory=CompactionArgs)
    expire_snapshots: ScheduleArgs = ScheduleArgs(cron=DEFAULTS.expire_snapshots)
    expire_changelogs: ScheduleArgs = ScheduleArgs(cron=DEFAULTS.expire_changelogs)
    compact_manifests: ScheduleArgs = ScheduleArgs(cron=DEFAULTS.compact_manifests)
    remove_orphans: ScheduleArgs = ScheduleArgs(cron=DEFAULTS.remove_orphans)
    defs_state: ResolvedDefsStateConfig = Field(
        default_factory=DefsStateConfigArgs.local_filesystem
    )

    @property
    def defs_state_config(self) -> DefsStateConfig:
        """One state per warehouse URI."""
        return DefsStateConfig.from_args(
            self.defs_state, default_key=f"PaimonWarehouseComponent[{self.warehouse.uri}]"
        )

    def write_state_to_path(self, state_path: Path) -> None:
        """List the warehouse and store the tables found, atomically."""
        resource = self.warehouse.resource()
        found = discover_tables(
            resource.uri,
            resource.paimon_options(),
            include=self.tables.include,
            exclude=self.tables.exclude,
        )
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
        crons = MaintenanceCrons(
            full_compaction=self.compaction.full_cron,
            expire_snapshots=self.expire_snapshots.cron,
            expire_changelogs=self.expire_changelogs.cron,
            compact_manifests=self.compact_manifests.cron,
            remove_orphans=self.remove_orphans.cron,
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
                    asset_checks=[build_lsm_health_check(spec)],
                    jobs=[job],
                )
            )
            parts.append(build_maintenance_definitions(spec, crons))
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

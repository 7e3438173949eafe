"""A Paimon table as Dagster sees it: layout, partitions, and the thresholds sensors act on."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dagster import AssetKey, PartitionsDefinition

from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.errors import InvalidArgumentError
from dagster_paimon.table import TableSpec

PartitionMapping = Callable[[str], Mapping[str, str]]


@dataclass(frozen=True)
class PaimonTableSpec(TableSpec):
    """Everything the asset factory needs to know about one primary-key table.

    The sensor thresholds default to the table's `num-sorted-run.compaction-trigger` and
    `compaction.max-size-amplification-percent`; set them to compact earlier or later.
    `warehouse_key` and `spark_key` name the resources (PaimonWarehouse, a PySpark resource)
    every definition of the table uses.

    Raises InvalidArgumentError (a partitioned spec without partition_mapping for several keys) and,
    from validate, InvalidTableSpecError.
    """

    partitions_def: PartitionsDefinition | None = None
    partition_mapping: PartitionMapping | None = None
    description: str | None = None
    sensor_sorted_run_trigger: int | None = None
    sensor_max_size_amplification_percent: int | None = None
    warehouse_key: str = "warehouse"
    spark_key: str = "pyspark"

    def __post_init__(self) -> None:
        """Partitioned assets need a way to name the Paimon partition of a Dagster partition."""
        if (
            self.partitions_def is not None
            and self.partition_mapping is None
            and len(self.partition_keys) != 1
        ):
            raise InvalidArgumentError(
                f"{self.identifier}: give partition_mapping to map a Dagster partition key "
                f"onto the Paimon partition keys {list(self.partition_keys)}"
            )

    @property
    def asset_key(self) -> AssetKey:
        """<db>/<table>: the ingest asset."""
        return AssetKey([self.database, self.name])

    @property
    def compaction_asset_key(self) -> AssetKey:
        """<db>/<table>/compaction."""
        return AssetKey([self.database, self.name, "compaction"])

    @property
    def pool(self) -> str:
        """One compaction of a table at a time: a Dagster pool per table."""
        return f"paimon_compaction_{self.database}_{self.name}"

    def warehouse(self, resources: Any) -> PaimonWarehouse:
        """This table's warehouse resource among a context's resources."""
        return getattr(resources, self.warehouse_key)

    def paimon_partition(self, partition_key: str | None) -> dict[str, str] | None:
        """The Paimon partition a Dagster partition key stands for (None: whole table)."""
        if partition_key is None or self.partitions_def is None:
            return None
        if self.partition_mapping is not None:
            return {k: str(v) for k, v in self.partition_mapping(partition_key).items()}
        return {self.partition_keys[0]: partition_key}

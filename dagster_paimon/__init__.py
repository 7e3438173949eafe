"""dagster-paimon: keep Apache Paimon primary-key tables healthy and fed, from Dagster and Spark.

Names resolve lazily so `import dagster_paimon` (and the CLI) loads neither Dagster nor Spark
until one of their adapters is used.
"""

from dagster_paimon.lazy import lazy_getattr

_ERRORS = (
    "DagsterPaimonError",
    "InputError",
    "InvalidArgumentError",
    "InternalError",
    "WarehouseUnreachableError",
    "DatabaseNotFoundError",
    "TableNotFoundError",
    "InvalidTableSpecError",
    "InvalidOptionError",
    "SnapshotNotFoundError",
    "PartitionNotFoundError",
    "TagNotFoundError",
    "TagExistsError",
    "ConsumerNotFoundError",
    "CorruptFileError",
    "CorruptMetadataError",
    "SchemaMismatchError",
    "MergeError",
    "CommitConflictError",
    "MaintenanceAbortedError",
    "StaleMaintenancePlanError",
    "MaintenanceStepError",
    "MaintenanceStepInputError",
    "MissingCredentialsError",
    "InvalidCredentialsError",
    "AccessDeniedError",
    "BucketNotFoundError",
    "EndpointUnreachableError",
    "UnsupportedWarehouseError",
    "RepairRefusedError",
    "TableUnhealthyError",
    "TablesUnreadableError",
    "TransientStoreError",
    "CommitOutcomeUnknownError",
    "UnsupportedLayoutError",
    "UnsupportedCatalogError",
)

_EXPORTS = {
    "PaimonTable": "dagster_paimon.paimon_table",
    "TableSpec": "dagster_paimon.table",
    "TableRef": "dagster_paimon.table",
    # results: what each operation returns
    "Reported": "dagster_paimon.results",
    "IngestResult": "dagster_paimon.ingest.result",
    "CompactionResult": "dagster_paimon.lsm.compaction",
    "RescaleResult": "dagster_paimon.lsm.compaction",
    "ExpiryResult": "dagster_paimon.maintenance.expire",
    "PartitionExpiryResult": "dagster_paimon.maintenance.partitions",
    "ManifestCompactionResult": "dagster_paimon.maintenance.manifests",
    "OrphanResult": "dagster_paimon.maintenance.orphans",
    "DoctorResult": "dagster_paimon.maintenance.doctor",
    "TagResult": "dagster_paimon.maintenance.tags",
    "TagInfo": "dagster_paimon.maintenance.tags",
    "ConsumerList": "dagster_paimon.maintenance.consumers",
    "ConsumerRemovalResult": "dagster_paimon.maintenance.consumers",
    "ConsumerResetResult": "dagster_paimon.maintenance.consumers",
    "RollbackResult": "dagster_paimon.maintenance.rollback",
    "MaintenanceResult": "dagster_paimon.maintenance.maintain",
    "TableHealth": "dagster_paimon.kinds.health",
    "HealthTotals": "dagster_paimon.kinds.health",
    "BucketHealth": "dagster_paimon.kinds.health",
    "PartitionsToCompact": "dagster_paimon.kinds",
    "TableLevels": "dagster_paimon.lsm.model.levels",
    # the warehouse as a whole
    "discover_tables": "dagster_paimon.discovery",
    # the Dagster adapter
    "PaimonWarehouse": "dagster_paimon.dagster.resources",
    "PaimonTableSpec": "dagster_paimon.dagster.specs",
    "CompactionConfig": "dagster_paimon.dagster.compaction",
    "build_compaction_asset": "dagster_paimon.dagster.compaction",
    "build_compaction_sensor": "dagster_paimon.dagster.sensors",
    "build_health_check": "dagster_paimon.dagster.checks",
    "build_lsm_health_check": "dagster_paimon.dagster.checks",
    "build_small_files_check": "dagster_paimon.dagster.checks",
    "PaimonWarehouseComponent": "dagster_paimon.dagster.component",
    **dict.fromkeys(_ERRORS, "dagster_paimon.errors"),
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)


def __dir__() -> list[str]:
    """The lazy names too: `dg` lists a registry module's components by its attributes."""
    return sorted({*globals(), *__all__})

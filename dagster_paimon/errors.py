"""Typed errors: one root so callers can catch everything we raise on purpose."""


class DagsterPaimonError(Exception):
    """Root of every error dagster-paimon raises deliberately."""


class WarehouseUnreachableError(DagsterPaimonError):
    """The warehouse location cannot be listed or does not exist."""


class DatabaseNotFoundError(DagsterPaimonError):
    """The database named in a table identifier does not exist in the warehouse."""


class TableNotFoundError(DagsterPaimonError):
    """The table named in an identifier does not exist in its database."""


class InvalidTableSpecError(DagsterPaimonError):
    """A table spec contradicts itself or Paimon's rules for primary-key tables."""


class InvalidOptionError(DagsterPaimonError):
    """A table option has an unknown or malformed value."""


class SnapshotNotFoundError(DagsterPaimonError):
    """A requested snapshot id does not exist (never written, or expired)."""


class CorruptMetadataError(DagsterPaimonError):
    """Snapshot, manifest or level metadata violates an LSM invariant."""


class SchemaMismatchError(DagsterPaimonError):
    """Data or an existing table does not match the schema it is used with."""


class MergeError(DagsterPaimonError):
    """Records of one key cannot be merged as the table's merge engine requires."""


class CommitConflictError(DagsterPaimonError):
    """Another commit changed the files this one replaces; nothing of this one was committed."""


class MaintenanceAbortedError(DagsterPaimonError):
    """Maintenance stopped before deleting anything: it could not prove the files unused."""


class StaleMaintenancePlanError(MaintenanceAbortedError):
    """A new tag, consumer or branch appeared after planning; the plan could delete its files."""


class MissingCredentialsError(WarehouseUnreachableError):
    """No S3 credentials were given and boto3's credential chain found none."""


class InvalidCredentialsError(WarehouseUnreachableError):
    """The S3 store rejected the access key, secret or session token."""


class AccessDeniedError(WarehouseUnreachableError):
    """The credentials are valid but may not list or write the warehouse location."""


class BucketNotFoundError(WarehouseUnreachableError):
    """The warehouse's bucket does not exist on the S3 store."""


class EndpointUnreachableError(WarehouseUnreachableError):
    """The S3 endpoint cannot be connected to."""


class UnsupportedWarehouseError(WarehouseUnreachableError):
    """The warehouse URI uses a scheme without an atomic create-if-absent we trust."""


class RepairRefusedError(DagsterPaimonError):
    """The doctor will not roll back: a broken snapshot is not among the newest, or it is tagged."""


class TableUnhealthyError(DagsterPaimonError):
    """The doctor found snapshots or tags no reader can read, and they were not repaired."""

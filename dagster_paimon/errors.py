"""Typed errors: one root so callers can catch everything we raise on purpose."""

from collections.abc import Iterator
from contextlib import contextmanager


class DagsterPaimonError(Exception):
    """Root of every error dagster-paimon raises deliberately."""


class InputError(DagsterPaimonError):
    """The caller asked for something that cannot be done as asked; nothing was changed.

    The CLI exits 2 for these (and for usage errors) only: fix the input and run again.
    """


class InvalidArgumentError(InputError, ValueError):
    """An argument is malformed or out of range: a duration, a partition spec, a mode, a name."""


class InternalError(DagsterPaimonError, RuntimeError):
    """An invariant of dagster-paimon itself failed: a bug to report, never the caller's input."""


class WarehouseUnreachableError(InputError):
    """The warehouse location cannot be listed or does not exist."""


class DatabaseNotFoundError(InputError):
    """The database named in a table identifier does not exist in the warehouse."""


class TableNotFoundError(InputError):
    """The table named in an identifier does not exist in its database."""


class InvalidTableSpecError(InputError):
    """A table spec contradicts itself or Paimon's rules for primary-key tables."""


class InvalidOptionError(InputError):
    """A table option has an unknown or malformed value."""


class SnapshotNotFoundError(InputError):
    """A requested snapshot id does not exist (never written, or expired)."""


class PartitionNotFoundError(InputError):
    """A partition spec matches no partition holding data."""


class TagNotFoundError(InputError):
    """A named tag does not exist."""


class TagExistsError(InputError):
    """A tag of that name already exists (Paimon refuses to create it again)."""


class ConsumerNotFoundError(InputError):
    """A named streaming consumer does not exist."""


class CorruptMetadataError(DagsterPaimonError):
    """Snapshot, manifest or level metadata violates an LSM invariant."""


class CorruptFileError(CorruptMetadataError):
    """A snapshot, schema, manifest or data file cannot be decoded: truncated, overwritten, or
    not the format its name says. `dagster-paimon doctor` tells which snapshots need it."""


class SchemaMismatchError(InputError):
    """Data or an existing table does not match the schema it is used with."""


class MergeError(DagsterPaimonError):
    """Records of one key cannot be merged as the table's merge engine requires."""


class CommitConflictError(DagsterPaimonError):
    """Another commit changed the files this one replaces; nothing of this one was committed."""


class MaintenanceAbortedError(DagsterPaimonError):
    """Maintenance stopped before deleting anything: it could not prove the files unused."""


class MaintenanceStepError(DagsterPaimonError):
    """A step of a maintenance pass failed; later steps did not run, earlier steps' commits
    stay. `step` names it, `completed` maps the steps before it to their results."""

    def __init__(self, message: str, *, step: str = "", completed: dict | None = None):
        super().__init__(message)
        self.step = step
        self.completed = dict(completed or {})


class MaintenanceStepInputError(MaintenanceStepError, InputError):
    """A maintenance step refused its input (an option, the table's layout)."""


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


class TablesUnreadableError(DagsterPaimonError):
    """Some tables of a warehouse listing could not be read (each of its rows says why)."""


class TransientStoreError(DagsterPaimonError):
    """A store request kept failing transiently (throttling, 5xx, a dropped connection) after
    every retry; what the table looks like afterwards is part of the message."""

    def __init__(
        self,
        message: str,
        *,
        operation: str = "",
        key: str = "",
        code: str = "",
        table_unchanged: bool | None = None,
    ):
        # defaults only so that pickle (a Spark task's error going back to the driver) can
        # rebuild it from its message: the fields come back from its __dict__
        super().__init__(message)
        self.operation = operation
        self.key = key
        self.code = code
        self.table_unchanged = table_unchanged
        self.judged = table_unchanged is not None
        # running the same operation again can neither lose nor duplicate committed data
        self.retry_safe = True
        self.before_retrying = ""

    def judge(self, table_unchanged: bool | None, *, before_retrying: str = "") -> None:
        """Record what became of the table, once: the innermost layer that knows says it.

        `before_retrying`: what to check first when running the operation again could apply
        its change twice (an append whose snapshot may have landed); empty when it cannot.
        """
        if not self.judged:
            self.table_unchanged = table_unchanged
            self.retry_safe = not before_retrying
            self.before_retrying = before_retrying
            self.judged = True

    def __str__(self) -> str:
        """The request, the object, the store's code, then what became of the table."""
        if self.table_unchanged is None:
            state = "the table may or may not have changed, and every snapshot it keeps still reads"
        elif self.table_unchanged:
            state = "the table is unchanged"
        else:
            state = "the table changed"
        if self.retry_safe:
            return f"{self.args[0]}; {state}; retrying the operation is safe"
        return f"{self.args[0]}; {state}; before retrying, {self.before_retrying}"


class CommitOutcomeUnknownError(TransientStoreError):
    """The store never confirmed whether a snapshot was created; the commit's files are kept."""


def transient_cause(e: BaseException) -> TransientStoreError | None:
    """The TransientStoreError behind `e`, also when a library wrapped it in its own error
    (pypaimon turns any failure to load a schema into a RuntimeError)."""
    seen: set[int] = set()
    current: BaseException | None = e
    while current is not None and id(current) not in seen:
        if isinstance(current, TransientStoreError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def unexpected(error: BaseException) -> bool:
    """A bug: our own invariant failing, or an exception none of our layers typed (an I/O
    error the store raised untyped is an operation failure, not a bug)."""
    return isinstance(error, InternalError) or not isinstance(error, DagsterPaimonError | OSError)


@contextmanager
def transient_errors(*, table_unchanged: bool | None = None) -> Iterator[None]:
    """Raise the TransientStoreError behind a failure as itself (libraries wrap it in theirs),
    judging the table unchanged when the caller knows nothing of it was changed yet."""
    try:
        yield
    except Exception as e:
        transient = transient_cause(e)
        if transient is None:
            raise
        if table_unchanged is not None:
            transient.judge(table_unchanged)
        if transient is e:
            raise
        raise transient.with_traceback(transient.__traceback__)  # noqa: B904 (its own cause)


class UnsupportedLayoutError(InvalidTableSpecError):
    """The table uses a Paimon mode we do not implement for this operation; nothing was written."""


class UnsupportedCatalogError(InputError):
    """The catalog options name a catalog (Hive, JDBC, REST) we do not commit through."""

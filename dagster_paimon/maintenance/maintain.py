"""One maintenance pass: what Java's `TableCommitImpl.maintain` runs after a commit, in its order.

1. automatic tag creation (`tag.automatic-creation`; skipped when `none`, the default),
2. tag expiry by time retained (skipped when `tag.time-expire-enabled` is false),
3. partition expiry (skipped when the table sets no `partition.expiration-time`, or has no
   partition),
4. consumer expiry (skipped when the table sets no `consumer.expiration-time`),
5. snapshot expiry (always: its options all have defaults).

Options can be overridden for one pass (`maintain(table, options={...})`): the keys the steps
read (OPTION_KEYS), laid over the table's options in memory, never written to its schema. All
options in use are parsed, as each step parses them, before any step runs.

Whether a step runs is decided from the options before it is called, so a step that
runs and fails is never mistaken for one that is not configured: the pass stops there (later
steps do not run, since each relies on the ones before it: snapshot expiry must see the
consumers expiry removed) and raises MaintenanceStepError naming the step, the original error
its cause. What earlier steps committed stays: each step is its own all-or-nothing operation.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from dagster_paimon import unsupported
from dagster_paimon.errors import (
    InputError,
    InvalidOptionError,
    MaintenanceStepError,
    MaintenanceStepInputError,
)
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.maintenance import partitions
from dagster_paimon.maintenance.auto_tags import create_automatic_tags
from dagster_paimon.maintenance.consumers import expire_consumers
from dagster_paimon.maintenance.context import DEFAULT_CONTEXT, MaintenanceContext, table_name
from dagster_paimon.maintenance.directories import (
    CLEAN_EMPTY_DIRECTORIES,
    CLEAN_EMPTY_DIRECTORIES_FALLBACK,
    clean_empty_directories_enabled,
)
from dagster_paimon.maintenance.expire import expire_snapshots
from dagster_paimon.maintenance.options import ExpireConfig, consumer_expiration_ms
from dagster_paimon.maintenance.partition_time import TIMESTAMP_FORMATTER, TIMESTAMP_PATTERN
from dagster_paimon.maintenance.partitions import (
    EXPIRATION_TIME,
    PartitionExpiryConfig,
    expire_partitions,
)
from dagster_paimon.maintenance.tag_options import TagOptions
from dagster_paimon.maintenance.tags import expire_tags
from dagster_paimon.options import (
    CHANGELOG_RETAIN_MAX,
    CHANGELOG_RETAIN_MIN,
    CHANGELOG_TIME_RETAINED,
    CONSUMER_CHANGELOG_ONLY,
    CONSUMER_EXPIRATION_TIME,
    SNAPSHOT_EXPIRE_LIMIT,
    SNAPSHOT_RETAIN_MAX,
    SNAPSHOT_RETAIN_MIN,
    SNAPSHOT_TIME_RETAINED,
    duration_ms,
    read_option,
)
from dagster_paimon.results import DETAIL, METRIC, Metrics, Reported

log = logging.getLogger(__name__)

TAG_CREATION: Final = "tag_creation"
TAG_EXPIRY: Final = "tag_expiry"
PARTITION_EXPIRY: Final = "partition_expiry"
CONSUMER_EXPIRY: Final = "consumer_expiry"
SNAPSHOT_EXPIRY: Final = "snapshot_expiry"
# Java's order (TableCommitImpl.maintain)
STEPS: Final = (TAG_CREATION, TAG_EXPIRY, PARTITION_EXPIRY, CONSUMER_EXPIRY, SNAPSHOT_EXPIRY)
# the operation (unsupported.py) each step is: a refused one stops the pass before any step
OPERATION_OF: Final = {
    TAG_CREATION: unsupported.TAGS,
    TAG_EXPIRY: unsupported.TAGS,
    PARTITION_EXPIRY: unsupported.PARTITION_EXPIRY,
    CONSUMER_EXPIRY: unsupported.CONSUMERS,
    SNAPSHOT_EXPIRY: unsupported.EXPIRY,
}
# every table option a step of the pass reads: what `maintain(options=...)` may override
OPTION_KEYS: Final = frozenset(
    {
        "tag.automatic-creation",
        "tag.creation-period",
        "tag.creation-period-duration",
        "tag.period-formatter",
        "tag.creation-delay",
        "tag.num-retained-max",
        "tag.default-time-retained",
        "tag.time-expire-enabled",
        "tag.automatic-completion",
        "tag.batch.customized-name",
        "sink.process-time-zone",
        "sink.watermark-time-zone",
        EXPIRATION_TIME,
        partitions.CHECK_INTERVAL,
        partitions.STRATEGY,
        partitions.MAX_NUM,
        partitions.BATCH_SIZE,
        TIMESTAMP_FORMATTER,
        TIMESTAMP_PATTERN,
        CONSUMER_EXPIRATION_TIME,
        CONSUMER_CHANGELOG_ONLY,
        SNAPSHOT_RETAIN_MIN,
        SNAPSHOT_RETAIN_MAX,
        SNAPSHOT_TIME_RETAINED,
        SNAPSHOT_EXPIRE_LIMIT,
        CHANGELOG_RETAIN_MIN,
        CHANGELOG_RETAIN_MAX,
        CHANGELOG_TIME_RETAINED,
        CLEAN_EMPTY_DIRECTORIES,
        CLEAN_EMPTY_DIRECTORIES_FALLBACK,
    }
)


@dataclass(frozen=True, kw_only=True)
class MaintenanceResult(Reported):
    """Each step's result (None when skipped; `skipped` says why), in Java's order.

    Metrics: each step's own metrics prefixed with the step (`snapshot_expiry_expired`), the
    number of steps run and skipped, and the pass's seconds.
    """

    table: str
    tag_creation: Reported | None = None
    tag_expiry: Reported | None = None
    partition_expiry: Reported | None = None
    consumer_expiry: Reported | None = None
    snapshot_expiry: Reported | None = None
    skipped: Mapping[str, str] = field(default_factory=dict)
    dry_run: bool = False
    seconds: float = 0.0

    FIELDS = {
        "table": DETAIL,
        TAG_CREATION: DETAIL,
        TAG_EXPIRY: DETAIL,
        PARTITION_EXPIRY: DETAIL,
        CONSUMER_EXPIRY: DETAIL,
        SNAPSHOT_EXPIRY: DETAIL,
        "skipped": DETAIL,
        "dry_run": DETAIL,
        "steps_run": METRIC,
        "steps_skipped": METRIC,
        "seconds": METRIC,
    }

    @property
    def steps_run(self) -> int:
        """How many steps ran."""
        return sum(getattr(self, step) is not None for step in STEPS)

    @property
    def steps_skipped(self) -> int:
        """How many steps the table's options did not ask for."""
        return len(self.skipped)

    def metrics(self) -> Metrics:
        """The pass's numbers, then each step's under `<step>_<name>`."""
        found = super().metrics()
        for step in STEPS:
            result = getattr(self, step)
            if result is not None:
                found.update({f"{step}_{k}": v for k, v in result.metrics().items()})
        return found

    def summary(self) -> str:
        """One line per step: its own summary, or why it was skipped."""
        would = " (dry run)" if self.dry_run else ""
        lines = [f"{self.table}: maintenance pass{would}, {self.steps_run} steps run"]
        for step in STEPS:
            result = getattr(self, step)
            if result is not None:
                lines.append(f"  {step}: {result.summary()}")
            else:
                lines.append(f"  {step}: skipped ({self.skipped.get(step, '')})")
        return "\n".join(lines)


def pass_options(
    table_options: Mapping[str, str], overrides: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The options one pass reads: the table's, the overrides on top, each parsed as its step
    parses it, so a bad one fails before any step runs.

    Raises InvalidOptionError (an override key no step reads; a malformed value),
    InvalidArgumentError (values that contradict each other, e.g. retain-max below retain-min).
    """
    given = dict(overrides or {})
    unknown = sorted(set(given) - OPTION_KEYS)
    if unknown:
        raise InvalidOptionError(
            f"the maintenance pass reads no option {', '.join(map(repr, unknown))}; it reads "
            f"{', '.join(sorted(OPTION_KEYS))}"
        )
    if any(not isinstance(v, str) for v in given.values()):
        raise InvalidOptionError(f"option overrides must be strings, got {given!r}")
    options = {**table_options, **given}
    TagOptions.from_table_options(options)
    if read_option(options, EXPIRATION_TIME, duration_ms, None) is not None:
        PartitionExpiryConfig.of(options)
    ExpireConfig.from_table_options(options)
    clean_empty_directories_enabled(options)
    return options


def _why_skipped(table: FileStoreTable, options: Mapping[str, str]) -> dict[str, str]:
    """The steps the pass's options do not ask for, with the reason."""
    skipped: dict[str, str] = {}
    tags = TagOptions.from_table_options(options)
    if tags.mode == "none":
        skipped[TAG_CREATION] = "tag.automatic-creation is not set (none)"
    if not tags.time_expire_enabled:
        skipped[TAG_EXPIRY] = "tag.time-expire-enabled is false"
    if not table.table_schema.partition_keys:
        skipped[PARTITION_EXPIRY] = "the table is not partitioned"
    elif read_option(options, EXPIRATION_TIME, duration_ms, None) is None:
        skipped[PARTITION_EXPIRY] = f"{EXPIRATION_TIME} is not set"
    if consumer_expiration_ms(options) is None:
        skipped[CONSUMER_EXPIRY] = "consumer.expiration-time is not set"
    return skipped


def maintain(
    table: FileStoreTable,
    *,
    options: Mapping[str, str] | None = None,
    dry_run: bool = False,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> MaintenanceResult:
    """Run the steps Java's commit maintains, in its order, each the options ask for.

    `options` override the table's for this pass only (keys in OPTION_KEYS; the table's
    schema is not changed); every step runs in `context` (its clock, its file store). With
    dry_run every step previews against the table as it is (a step does not see what an
    earlier one would have changed). Raises InvalidOptionError, InvalidArgumentError (an
    unknown override, a malformed or contradictory option: before any step runs) and
    MaintenanceStepError (a step failed: `step` names it, `completed` holds the results of the
    steps before it, the step's error is its cause; MaintenanceStepInputError, also an
    InputError, when that error was one).
    """
    start = time.perf_counter()
    name = table_name(table)
    in_use = pass_options(table.table_schema.options, options)
    if options:
        # every step reads table.table_schema.options: a copy in memory carries the overrides
        table = table.copy_without_time_travel(dict(options))
    runs: dict[str, Callable[[], Any]] = {
        TAG_CREATION: lambda: create_automatic_tags(table, dry_run=dry_run, context=context),
        TAG_EXPIRY: lambda: expire_tags(table, dry_run=dry_run, context=context),
        PARTITION_EXPIRY: lambda: expire_partitions(table, dry_run=dry_run, context=context),
        CONSUMER_EXPIRY: lambda: expire_consumers(table, dry_run=dry_run, context=context),
        SNAPSHOT_EXPIRY: lambda: expire_snapshots(table, dry_run=dry_run, context=context),
    }
    skipped = _why_skipped(table, in_use)
    for step in STEPS:
        if step not in skipped:
            unsupported.check_supported_layout(table.table_schema, operation=OPERATION_OF[step])
    done: dict[str, Reported] = {}
    for step in STEPS:
        if step in skipped:
            log.info("%s: %s skipped: %s", name, step, skipped[step])
            continue
        try:
            done[step] = runs[step]()
        except Exception as e:
            kind = MaintenanceStepInputError if isinstance(e, InputError) else MaintenanceStepError
            ran = ", ".join(done) or "none"
            raise kind(
                f"maintenance pass of {name} stopped at step {step} (steps done: {ran}; later "
                f"steps not run): {type(e).__name__}: {e}",
                step=step,
                completed=dict(done),
            ) from e
        log.info("%s: %s: %s", name, step, getattr(done[step], "summary", lambda: "")())
    return MaintenanceResult(
        table=name,
        **done,
        skipped=skipped,
        dry_run=dry_run,
        seconds=time.perf_counter() - start,
    )

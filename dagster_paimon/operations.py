"""Every table operation declared once: its name, its parameters, their help, its result.

The CLI's flags (cli/), the Dagster run config (dagster/) and `PaimonTable`'s keywords come
from these declarations, and tests/test_operations.py checks each door against them, so a
parameter is spelled one way everywhere (`older_than`, `--older-than`, `older_than:`). Kept free
of pypaimon, click and Dagster: the CLI builds its commands from it before loading the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, get_args

from dagster_paimon.arguments import parse_duration
from dagster_paimon.errors import InvalidArgumentError

Kind = Literal[
    "flag",  # a bool, False unless given
    "count",  # an int >= 1
    "int",  # any int
    "text",  # a str
    "duration",  # a timedelta; in config and on the command line Paimon's text ("7d")
    "timestamp",  # a datetime; ISO 8601 text, naive meaning UTC
    "choice",  # one of `choices`
    "partition",  # one partition spec {column: value}
    "partitions",  # several partition specs (any of them)
    "options",  # table options {key: value}
]


@dataclass(frozen=True)
class Param:
    """One parameter of an operation: the keyword of PaimonTable's method and the config field
    (`name`), the command-line flag (`flag`, derived from the name unless it reads better)."""

    name: str
    kind: Kind
    help: str
    default: Any = None
    choices: tuple[str, ...] = ()
    required: bool = False
    positive: bool = False  # durations: must be > 0
    metavar: str | None = None
    cli_flag: str | None = None

    @property
    def flag(self) -> str:
        """The command-line flag: `--older-than` for older_than unless declared otherwise."""
        return self.cli_flag or "--" + self.name.replace("_", "-")

    def value(self, given: Any) -> Any:
        """What the door takes from config or text: a duration or time parsed, checked as the
        command line checks it. Raises InvalidArgumentError naming the parameter."""
        if given is None:
            return None
        if self.kind == "duration":
            duration = given if isinstance(given, timedelta) else parse_duration(str(given))
            if self.positive and duration <= timedelta(0):
                raise InvalidArgumentError(
                    f"{self.name} must be positive: younger files may belong to a commit"
                )
            return duration
        if self.kind == "timestamp" and not isinstance(given, datetime):
            try:
                return datetime.fromisoformat(str(given))
            except ValueError as e:
                raise InvalidArgumentError(f"{self.name} {given!r} is not an ISO time") from e
        if self.kind == "choice" and given not in self.choices:
            raise InvalidArgumentError(f"{self.name} must be one of {list(self.choices)}")
        return given


@dataclass(frozen=True)
class Operation:
    """One operation: the CLI command `name`, PaimonTable's `method`, what it returns."""

    name: str
    summary: str
    params: tuple[Param, ...]
    result: str
    method: str = ""
    changes_table: bool = True

    def __post_init__(self) -> None:
        """The method is the command's name in snake case unless declared otherwise."""
        if not self.method:
            object.__setattr__(self, "method", self.name.replace("-", "_"))

    def param(self, name: str) -> Param:
        """The parameter called `name`."""
        return next(p for p in self.params if p.name == name)

    def arguments(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The keywords of PaimonTable's method from config values or parsed flags, each
        checked by its parameter; names the operation does not declare are a bug."""
        unknown = sorted(set(given) - {p.name for p in self.params})
        if unknown:
            raise InvalidArgumentError(f"{self.name} takes no {unknown}")
        return {name: self.param(name).value(value) for name, value in given.items()}


def _dry_run(what: str = "list, delete nothing") -> Param:
    """--dry-run: report what the operation would do."""
    return Param("dry_run", "flag", what, default=False)


PARTITION = Param("partition", "partition", "only buckets of this partition", metavar="K=V[,K=V]")
ExecutorName = Literal["local", "spark"]
"""Where rewrite tasks run, as every door spells it."""
EXECUTOR = Param(
    "executor",
    "choice",
    "where rewrite tasks run: this process, or the Spark session",
    default="local",
    choices=get_args(ExecutorName),
)


def _retention(what: str) -> tuple[Param, ...]:
    """The retention overrides of snapshot and changelog expiry."""
    return (
        Param("older_than", "duration", f"expire only {what} older than this (e.g. 12h, 7d)"),
        Param("retain_min", "count", f"keep at least N {what}", metavar="N"),
        Param("retain_max", "count", f"keep at most N {what}", metavar="N"),
        Param("max_deletes", "count", f"expire at most N {what} per run", metavar="N"),
        _dry_run(),
    )


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "health",
        "sorted runs and size amplification (append tables: small files) per bucket",
        (PARTITION,),
        "TableHealth",
        changes_table=False,
    ),
    Operation(
        "partitions-to-compact",
        "the partitions that need compaction now, by the table's triggers",
        (
            Param(
                "trigger",
                "count",
                "sorted runs that make a bucket due (default: num-sorted-run.compaction-trigger)",
                metavar="N",
            ),
            Param(
                "max_amp",
                "count",
                "size amplification, in percent, that makes a bucket due (default: "
                "compaction.max-size-amplification-percent)",
                metavar="PERCENT",
            ),
        ),
        "PartitionsToCompact",
        changes_table=False,
    ),
    Operation(
        "compact",
        "universal (or full) compaction of buckets",
        (
            Param("full", "flag", "compact every bucket fully", default=False),
            PARTITION,
            EXECUTOR,
            _dry_run("print the plan, write nothing"),
        ),
        "CompactionResult",
    ),
    Operation(
        "rescale",
        "rewrite a fixed-bucket table or some partitions into a new bucket count",
        (
            Param("bucket_num", "count", "the new number of buckets", required=True),
            Param(
                "partitions",
                "partitions",
                "only partitions matching this spec (repeatable: any of them); "
                "default every partition",
                metavar="K=V[,K=V]",
                cli_flag="--partition",
            ),
            EXECUTOR,
            _dry_run("print the plan, write nothing"),
        ),
        "RescaleResult",
    ),
    Operation(
        "expire-snapshots",
        "expire snapshots by retention, keeping tags",
        _retention("snapshots"),
        "ExpiryResult",
    ),
    Operation(
        "expire-changelogs",
        "expire long-lived changelogs by retention",
        _retention("changelogs"),
        "ExpiryResult",
    ),
    Operation(
        "expire-partitions",
        "drop partitions past partition.expiration-time",
        (
            Param(
                "older_than",
                "duration",
                "drop partitions older than this (default: partition.expiration-time)",
            ),
            Param(
                "strategy",
                "choice",
                "partition time from its values, or its last file creation "
                "(default: partition.expiration-strategy, else values-time)",
                choices=("values-time", "update-time"),
            ),
            Param(
                "max_num",
                "count",
                "drop at most N partitions (default: partition.expiration-max-num, else 100)",
                metavar="N",
            ),
            _dry_run("list, drop nothing"),
        ),
        "PartitionExpiryResult",
    ),
    Operation(
        "compact-manifests",
        "merge small manifests",
        (
            Param("full", "flag", "full compaction at any size", default=False),
            _dry_run("estimate, write nothing"),
        ),
        "ManifestCompactionResult",
    ),
    Operation(
        "remove-orphans",
        "delete old unreferenced files",
        (
            Param(
                "older_than",
                "duration",
                "only files older than this",
                default=timedelta(days=1),
                positive=True,
            ),
            _dry_run(),
        ),
        "OrphanResult",
    ),
    Operation(
        "maintain",
        "one maintenance pass: tags, partitions, consumers, snapshots",
        (
            Param(
                "options",
                "options",
                "a table option this pass reads instead of the table's (repeatable; the "
                "table is not changed)",
                metavar="KEY=VALUE",
                cli_flag="--option",
            ),
            _dry_run("report each step, change nothing"),
        ),
        "MaintenanceResult",
    ),
    Operation(
        "doctor",
        "find missing files; exit 1 if the table is unhealthy and not repaired",
        (
            Param(
                "rollback_unreadable",
                "flag",
                "roll back an unreadable newest run of snapshots (never deleting a manifest "
                "or data file)",
                default=False,
            ),
        ),
        "DoctorResult",
    ),
    Operation(
        "rollback",
        "roll back to a snapshot, a tag or a time",
        (
            Param("snapshot_id", "count", "the snapshot id", metavar="N", cli_flag="--snapshot"),
            Param("tag", "text", "the tag", metavar="NAME"),
            Param(
                "timestamp",
                "timestamp",
                "the newest snapshot at or before this time (naive: UTC)",
                metavar="ISO",
            ),
            _dry_run(),
        ),
        "RollbackResult",
    ),
    Operation("tags", "list the table's tags", (), "list[TagInfo]", "list_tags", False),
    Operation(
        "create-tag",
        "tag a snapshot so it outlives expiry",
        (
            Param("name", "text", "the tag's name", required=True),
            Param(
                "snapshot_id",
                "int",
                "the snapshot to tag (default: latest)",
                cli_flag="--snapshot",
            ),
            Param(
                "time_retained",
                "duration",
                "expire the tag after this long (default: tag.default-time-retained, else never)",
                positive=True,
            ),
            _dry_run("report, write nothing"),
        ),
        "TagResult",
    ),
    Operation(
        "delete-tag",
        "delete a tag and the files only it kept",
        (
            Param("name", "text", "the tag to delete", required=True),
            _dry_run("report, delete nothing"),
        ),
        "TagResult",
    ),
    Operation(
        "expire-tags",
        "delete tags past their time retained",
        (_dry_run("report, delete nothing"),),
        "TagResult",
    ),
    Operation(
        "auto-tag",
        "create the period tags Paimon's writers would",
        (_dry_run("report, write and delete nothing"),),
        "TagResult",
        "create_automatic_tags",
    ),
    Operation(
        "list-consumers",
        "list streaming consumers and the snapshot each reads next",
        (),
        "ConsumerList",
        "consumers",
        False,
    ),
    Operation(
        "expire-consumers",
        "remove consumers not written for a while",
        (
            Param(
                "older_than",
                "duration",
                "remove consumers last written longer ago than this (default: the table's "
                "consumer.expiration-time; unset, none expires)",
            ),
            _dry_run(),
        ),
        "ConsumerRemovalResult",
    ),
    Operation(
        "clear-consumers",
        "remove consumers by id pattern",
        (
            Param(
                "including",
                "text",
                "regular expression a consumer id must match in full",
                default=".*",
            ),
            Param("excluding", "text", "regular expression of consumer ids to keep"),
            _dry_run(),
        ),
        "ConsumerRemovalResult",
    ),
    Operation(
        "reset-consumer",
        "move a consumer to another snapshot",
        (
            Param(
                "consumer_id",
                "text",
                "the consumer id",
                required=True,
                metavar="ID",
                cli_flag="--consumer",
            ),
            Param(
                "next_snapshot", "count", "the snapshot to read next", required=True, metavar="N"
            ),
        ),
        "ConsumerResetResult",
    ),
)

BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}


def operation(name: str) -> Operation:
    """The operation the CLI calls `name` (`expire-snapshots`)."""
    return BY_NAME[name]

"""The `dagster-paimon` group: its help, its version, and every command."""

from __future__ import annotations

from typing import Any

import click

from dagster_paimon.cli import compaction, consumers, health, ingest, maintenance, tags
from dagster_paimon.cli.command import CommandGroup
from dagster_paimon.cli.exit_codes import EXIT_CODES, PROG


def _version() -> str:
    """The installed distribution's version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PROG)
    except PackageNotFoundError:
        return "unknown"


@click.group(
    PROG,
    cls=CommandGroup,
    help="Operate Apache Paimon primary-key tables: health, compaction, ingest, maintenance.\n\n"
    "Shared flags (--warehouse, --table, --json, --verbose, --s3-*) go before or after the "
    "command; given in both places, the one after the command wins.",
    epilog=EXIT_CODES,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(_version(), "--version", prog_name=PROG, message="%(prog)s %(version)s")
def cli(**shared: Any) -> None:
    """Nothing to do: each command reads the shared flags given before it from this context."""


for _command in (
    health.health,
    health.partitions_to_compact,
    compaction.compact,
    compaction.rescale,
    ingest.ingest,
    maintenance.expire_snapshots,
    maintenance.expire_changelogs,
    maintenance.expire_partitions,
    maintenance.compact_manifests,
    maintenance.remove_orphans,
    health.doctor,
    tags.tags,
    tags.create_tag,
    tags.delete_tag,
    tags.expire_tags,
    tags.auto_tag,
    maintenance.maintain,
    consumers.list_consumers,
    consumers.expire_consumers,
    consumers.clear_consumers,
    consumers.reset_consumer,
    maintenance.rollback,
    health.tables,
):
    cli.add_command(_command)

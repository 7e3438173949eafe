"""The tag commands, over the table's front door: list, create, delete, expire, auto-tag."""

from __future__ import annotations

from typing import Any

from dagster_paimon.cli.command import operation_command
from dagster_paimon.cli.shared import Shared


@operation_command("tags", "dagster-paimon tags --table db.orders --json")
def tags(shared: Shared) -> None:
    """List the table's tags, by snapshot id: name, snapshot, and retention if it has one."""
    shared.output.tags(shared.identifier, shared.paimon_table().list_tags())


@operation_command(
    "create-tag",
    "dagster-paimon create-tag --table db.orders --name release-1 --snapshot 42 --time-retained 7d",
)
def create_tag(shared: Shared, **given: Any) -> None:
    """Create a tag on a snapshot (the latest by default). A tag that exists is an input error
    (exit 2), as in Paimon."""
    shared.output.result(shared.paimon_table().create_tag(**given))


@operation_command(
    "delete-tag", "dagster-paimon delete-tag --table db.orders --name release-1 --dry-run"
)
def delete_tag(shared: Shared, **given: Any) -> None:
    """Delete a tag; if its snapshot was expired, also the data, manifest, index and statistics
    files no remaining snapshot, tag, changelog or branch uses. An unknown tag exits 2."""
    shared.output.result(shared.paimon_table().delete_tag(**given))


@operation_command("expire-tags", "dagster-paimon expire-tags --table db.orders --dry-run")
def expire_tags(shared: Shared, **given: Any) -> None:
    """Delete every tag whose time retained (from its creation) has passed, with the files only
    it kept alive. Tags without a retention stay."""
    shared.output.result(shared.paimon_table().expire_tags(**given))


@operation_command("auto-tag", "dagster-paimon auto-tag --table db.orders --dry-run")
def auto_tag(shared: Shared, **given: Any) -> None:
    """Do what Paimon's writers do after a commit: create a tag for every period that ended
    (tag.automatic-creation process-time, watermark or batch; tag.creation-period,
    tag.creation-delay, tag.period-formatter), delete the oldest auto tags beyond
    tag.num-retained-max, and expire tags by time retained."""
    shared.output.result(shared.paimon_table().create_automatic_tags(**given))

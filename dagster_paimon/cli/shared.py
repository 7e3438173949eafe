"""The flags every command takes, before or after the command name, and what a run learns.

The group and each command declare the same options (`shared_options`); a command merges the
values it was given with the group's (`merged`): after the command wins, then before it, then
the environment; a switch is on if given anywhere; repeated options add up. `--json` is eager,
so it chooses the run's output (`Invocation.output`) before any other flag is checked: a bad
flag after it is reported as JSON too.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from dagster_paimon.cli.exit_codes import PROG
from dagster_paimon.cli.output import JSON, TEXT, Output
from dagster_paimon.cli.params import Identifier, OptionPair

if TYPE_CHECKING:
    from dagster_paimon.format.table import FileStoreTable
    from dagster_paimon.paimon_table import PaimonTable

WAREHOUSE_ENV = "PAIMON_WAREHOUSE"


@dataclasses.dataclass
class Invocation:
    """The run as click reads it (the context's `obj`), for `main` to report its outcome."""

    command_path: str = PROG
    output: Output = TEXT


@dataclasses.dataclass(frozen=True)
class Shared:
    """The flags every command takes, merged from wherever they were given."""

    warehouse: str
    table: str | None
    output: Output
    verbose: bool
    s3_endpoint: str | None
    s3_region: str | None
    s3_path_style: bool
    catalog_option: tuple[tuple[str, str], ...] = ()

    def catalog_options(self) -> dict[str, str]:
        """S3 settings from the PAIMON_S3_* variables, flags winning (a local warehouse needs
        none), then every --catalog-option."""
        return {**self._s3_options(), **dict(self.catalog_option)}

    def _s3_options(self) -> dict[str, str]:
        """S3 settings from the PAIMON_S3_* variables, flags winning; a local warehouse needs
        none."""
        from dagster_paimon.storage.s3 import S3Settings, is_s3_uri

        if not is_s3_uri(self.warehouse):
            return {}
        env = S3Settings.from_env(os.environ)
        settings = dataclasses.replace(
            env,
            endpoint=self.s3_endpoint or env.endpoint,
            region=self.s3_region or env.region,
            path_style=self.s3_path_style or env.path_style,
        )
        return settings.catalog_options()

    @property
    def identifier(self) -> str:
        """The --table of a command that requires one (checked before the command runs)."""
        assert self.table is not None
        return self.table

    def open_table(self) -> FileStoreTable:
        """The --table of --warehouse, with the S3 settings of flags and environment."""
        from dagster_paimon.table import open_table

        return open_table(self.warehouse, self.identifier, self.catalog_options())

    def paimon_table(self) -> PaimonTable:
        """The --table of --warehouse behind the library's front door."""
        from dagster_paimon.paimon_table import PaimonTable

        return PaimonTable.open(self.warehouse, self.identifier, self.catalog_options())


def _choose_output(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    """--json, given before or after the command, makes the run's output JSON."""
    if value:
        ctx.ensure_object(Invocation).output = JSON
    return value


def shared_options(*, table: bool = True) -> list[click.Option]:
    """The shared flags, the same on the group and on each command (--table hidden on a
    command that takes none: given there, it is refused)."""
    return [
        click.Option(
            ["--warehouse"],
            metavar="URI",
            envvar=WAREHOUSE_ENV,
            show_envvar=True,
            help="warehouse path or s3://bucket/prefix",
        ),
        click.Option(
            ["--table"], type=Identifier(), hidden=not table, help="the table, as DB.TABLE"
        ),
        click.Option(
            ["--json", "json"],
            is_flag=True,
            is_eager=True,
            callback=_choose_output,
            help="print one JSON document on stdout (errors: one JSON object on stderr)",
        ),
        click.Option(["-v", "--verbose"], is_flag=True, help="log progress to stderr"),
        click.Option(
            ["--s3-endpoint"], metavar="URL", help="S3-compatible endpoint (env PAIMON_S3_ENDPOINT)"
        ),
        click.Option(["--s3-region"], metavar="REGION", help="S3 region (env PAIMON_S3_REGION)"),
        click.Option(
            ["--s3-path-style"],
            is_flag=True,
            help="path-style bucket addressing, as MinIO needs (env PAIMON_S3_PATH_STYLE)",
        ),
        click.Option(
            ["--catalog-option"],
            type=OptionPair(),
            multiple=True,
            help="a catalog option, with Paimon's keys (repeatable; over the S3 flags)",
        ),
    ]


NAMES = frozenset(str(o.name) for o in shared_options())
SWITCHES = ("verbose", "s3_path_style")
REPEATED = ("catalog_option",)
VALUES = ("warehouse", "table", "s3_endpoint", "s3_region")


def merged(ctx: click.Context, *, needs_table: bool) -> Shared:
    """A command's shared flags merged with the group's, checked: a warehouse is required,
    and a table where the command needs one (and refused where it takes none)."""
    group = ctx.parent  # None when the command runs without the group
    before = group.params if group is not None else {}
    values: dict[str, Any] = {}
    for name in SWITCHES:
        values[name] = bool(ctx.params[name] or before.get(name))
    for name in REPEATED:
        values[name] = (*(before.get(name) or ()), *ctx.params[name])
    for name in VALUES:
        only_before = group is not None and _given(group, name) and not _given(ctx, name)
        values[name] = before[name] if only_before else ctx.params[name]
    if not values["warehouse"]:
        raise click.UsageError(f"Missing option '--warehouse' (or set {WAREHOUSE_ENV})", ctx=ctx)
    if needs_table and not values["table"]:
        raise click.UsageError("Missing option '--table'", ctx=ctx)
    if not needs_table and values["table"]:
        raise click.UsageError(f"{ctx.info_name} takes no --table", ctx=ctx)
    return Shared(output=ctx.ensure_object(Invocation).output, **values)


def _given(ctx: click.Context, name: str) -> bool:
    """Whether the flag was on this context's command line (not the environment, a default)."""
    return ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE

"""The click classes of the CLI: a group and commands that both take the shared flags.

A command's callback is a handler `(shared, **its own flags)`: the command merges the shared
flags given before and after it (shared.py), checks them and sets up logging before calling
it, so a handler sees one `Shared` and its own flags, already parsed and checked.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

import click

from dagster_paimon.cli.output import JSON
from dagster_paimon.cli.params import operation_options
from dagster_paimon.cli.shared import NAMES, Invocation, merged, shared_options
from dagster_paimon.operations import operation


class _SharedFlags(click.Command):
    """A command or group whose usage errors answer in JSON when --json was asked for."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Parse as click does; on a usage error, look for a --json click never reached."""
        given = list(args)  # click's parser consumes the list it is given
        try:
            return super().parse_args(ctx, args)
        except click.UsageError:
            if _asks_for_json(given):
                ctx.ensure_object(Invocation).output = JSON
            raise


def _asks_for_json(args: list[str]) -> bool:
    """Whether --json is among arguments click could not read.

    The one look at raw arguments, made only after click refused them: its parser stops at the
    first bad argument (an unknown flag, a missing value) before it reaches a later --json, whose
    eager callback therefore never ran; the error must still come out in the format asked for.
    Arguments after `--` are values, not flags.
    """
    return "--json" in (args[: args.index("--")] if "--" in args else args)


class CommandGroup(_SharedFlags, click.Group):
    """The `dagster-paimon` group: the shared flags before the command name."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.params.extend(shared_options())


class TableCommand(_SharedFlags):
    """A sub-command: the shared flags after its name, merged with the group's for its handler."""

    def __init__(
        self,
        name: str,
        *,
        needs_table: bool = True,
        params: list[click.Parameter] | None = None,
        **kw: Any,
    ):
        super().__init__(name, params=[*shared_options(table=needs_table), *(params or [])], **kw)
        self.needs_table = needs_table

    def invoke(self, ctx: click.Context) -> Any:
        """Merge and check the shared flags, then run the handler with them and its own."""
        ctx.ensure_object(Invocation).command_path = ctx.command_path
        shared = merged(ctx, needs_table=self.needs_table)
        _configure_logging(shared.verbose)
        own = {name: value for name, value in ctx.params.items() if name not in NAMES}
        assert self.callback is not None
        return ctx.invoke(self.callback, shared, **own)


def command(
    name: str,
    summary: str,
    example: str,
    *,
    needs_table: bool = True,
    params: list[click.Parameter] | None = None,
) -> Callable[[Callable[..., None]], TableCommand]:
    """A sub-command over a handler: its docstring as help, an example in --help, the shared
    flags merged and checked (a warehouse, a table) before the handler runs."""

    def decorate(handler: Callable[..., None]) -> TableCommand:
        return click.command(
            name,
            cls=TableCommand,
            help=handler.__doc__,
            short_help=summary,
            epilog=f"\b\nExample:\n  {example}",
            needs_table=needs_table,
            params=params,
        )(handler)

    return decorate


def operation_command(name: str, example: str) -> Callable[[Callable[..., None]], TableCommand]:
    """The sub-command of a declared table operation (operations.py): its summary and flags
    from the declaration, so they are the door's keywords; the handler gets them by name."""
    declared = operation(name)
    return command(name, declared.summary, example, params=operation_options(declared))


def _configure_logging(verbose: bool) -> None:
    """Progress on stderr with --verbose; warnings and errors (tracebacks) always."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )

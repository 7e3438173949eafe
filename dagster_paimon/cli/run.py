"""Running one command and reporting its outcome: an exit code by the kind of failure, and the
error in one line (or one JSON object) on stderr."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import click

from dagster_paimon.cli.exit_codes import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SOFTWARE,
    EXIT_TRANSIENT,
    EXIT_USAGE,
    PROG,
)
from dagster_paimon.cli.group import cli
from dagster_paimon.cli.shared import Invocation
from dagster_paimon.errors import InputError, transient_cause, unexpected

log = logging.getLogger("dagster_paimon")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit code (see EXIT_CODES); never raises for a failure."""
    args = list(sys.argv[1:] if argv is None else argv)
    run = Invocation()
    try:
        done = cli.main(args, prog_name=PROG, standalone_mode=False, obj=run)
    except click.exceptions.NoArgsIsHelpError as e:
        click.echo(e.ctx.get_help() if e.ctx else str(e), err=True)
        return EXIT_USAGE
    except click.ClickException as e:
        return _report(run, e, EXIT_USAGE, _usage_message(e))
    except click.exceptions.Abort:
        return _report(run, KeyboardInterrupt(), EXIT_INTERRUPTED, "interrupted")
    except Exception as e:
        return _failed(run, e)
    # --help and --version return their exit code; a command has printed its result
    return done if isinstance(done, int) else EXIT_OK


def _usage_message(e: click.ClickException) -> str:
    """One line: click's message, and where to look when it is about how to call a command."""
    message = e.format_message()
    ctx = getattr(e, "ctx", None)
    if isinstance(e, click.UsageError) and not isinstance(e, click.BadParameter) and ctx:
        message += f" (see '{ctx.command_path} --help')"
    return message


def _failed(run: Invocation, error: Exception) -> int:
    """Report a failure in one line (or one JSON object) on stderr; its exit code by kind."""
    transient = transient_cause(error)
    if transient is not None:
        code = EXIT_TRANSIENT if transient.retry_safe else EXIT_FAILURE
        return _report(run, transient, code, f"failed transiently: {transient}")
    if isinstance(error, InputError):
        return _report(run, error, EXIT_USAGE, f"error: {error}")
    if not unexpected(error):
        return _report(run, error, EXIT_FAILURE, f"failed: {error}")
    log.error("unexpected failure, a bug in dagster-paimon", exc_info=error)
    return _report(run, error, EXIT_SOFTWARE, f"failed: {type(error).__name__}: {error}")


def _report(run: Invocation, error: BaseException, code: int, message: str) -> int:
    """Print the error through the run's output, naming the command; return its exit code."""
    ctx = getattr(error, "ctx", None)
    run.output.error(error, code, message, ctx.command_path if ctx else run.command_path)
    return code

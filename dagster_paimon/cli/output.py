"""How a run prints what it did: one interface, as text for people or as JSON for programs.

The output is chosen once, when click reads `--json` (`shared.py`), and every command prints
through it: results on stdout, errors on stderr. The JSON keys are a stable contract
(docs/cli.md); the text is for people and may change.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import click

from dagster_paimon.errors import TransientStoreError
from dagster_paimon.results import aligned

if TYPE_CHECKING:
    from dagster_paimon.overview import TableOverview

# what the option census finds in a table's options: "unsupported" and "unknown_options"
Findings = Mapping[str, list[str]]


class Printable(Protocol):
    """A result or record: its JSON keys and its human summary."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON object."""
        ...

    def summary(self) -> str:
        """The human lines."""
        ...


class Output(ABC):
    """Where a command's outcome goes; each method prints one kind of outcome."""

    @abstractmethod
    def result(self, result: Printable, findings: Findings | None = None) -> None:
        """An operation's result, with what the census found in the table's options."""

    @abstractmethod
    def tags(self, table: str, tags: Sequence[Printable]) -> None:
        """The table's tags."""

    @abstractmethod
    def tables(self, rows: Sequence[TableOverview]) -> None:
        """A warehouse's tables with their health totals."""

    @abstractmethod
    def error(self, error: BaseException, code: int, message: str, where: str) -> None:
        """A failure on stderr: `message` says it in one line, `where` names the command."""


class TextOutput(Output):
    """Summaries and aligned columns for people; an error as one line naming the command."""

    def result(self, result: Printable, findings: Findings | None = None) -> None:
        """The result's summary, then the refused modes and unknown options, if any."""
        text = result.summary()
        if findings and findings["unsupported"]:
            text += "\nunsupported by dagster-paimon: " + "; ".join(findings["unsupported"])
        if findings and findings["unknown_options"]:
            unknown = ", ".join(findings["unknown_options"])
            text += f"\noptions the census does not know (operations warn): {unknown}"
        click.echo(text)

    def tags(self, table: str, tags: Sequence[Printable]) -> None:
        """One line per tag."""
        click.echo("\n".join(t.summary() for t in tags) or f"{table}: no tags")

    def tables(self, rows: Sequence[TableOverview]) -> None:
        """One aligned line per table: primary-key tables, then append tables (their own
        columns), then the skipped and unreadable ones."""
        click.echo(_tables_text(rows) if rows else "no tables")

    def error(self, error: BaseException, code: int, message: str, where: str) -> None:
        """`<command>: <message>`, usage errors as `error: ...`."""
        if isinstance(error, click.ClickException):
            message = f"error: {message}"
        click.echo(f"{where}: {message}", err=True)


class JsonOutput(Output):
    """One JSON document on stdout; an error as one JSON object, the last line on stderr."""

    def result(self, result: Printable, findings: Findings | None = None) -> None:
        """The result's keys, then the census's findings."""
        _echo({**result.to_dict(), **(findings or {})})

    def tags(self, table: str, tags: Sequence[Printable]) -> None:
        """A list of tag objects."""
        _echo([t.to_dict() for t in tags])

    def tables(self, rows: Sequence[TableOverview]) -> None:
        """A list of table rows."""
        _echo([r.to_dict() for r in rows])

    def error(self, error: BaseException, code: int, message: str, where: str) -> None:
        """{"error": {"type", "message", "exit_code"}} (a transient error adds "retry_safe"
        and "table_unchanged")."""
        usage = isinstance(error, click.ClickException)
        body: dict[str, Any] = {
            # click's subclasses (NoSuchOption, BadParameter, ...) are all one kind here
            "type": "UsageError" if usage else type(error).__name__,
            "message": message if usage else str(error),
            "exit_code": code,
        }
        if isinstance(error, TransientStoreError):
            body.update(retry_safe=error.retry_safe, table_unchanged=error.table_unchanged)
        click.echo(json.dumps({"error": body}), err=True)


def _echo(document: Any) -> None:
    """One JSON document on stdout, keys in the order the result declares them."""
    click.echo(json.dumps(document, sort_keys=False))


def _tables_text(rows: Sequence[TableOverview]) -> str:
    """The lines of `tables` by kind, each kind's columns aligned, the notes last."""
    from dagster_paimon.table import APPEND, PRIMARY_KEY

    lsm = ["table", "snapshot", "buckets", "files", "bytes", "L0", "max-runs", "max-amp %"]
    append = ["table", "snapshot", "buckets", "files", "bytes", "small", "deleted-rows"]
    lines: dict[str, list[list[str]]] = {PRIMARY_KEY: [], APPEND: []}
    notes = []
    for r in rows:
        s = r.totals
        if s is None:
            notes.append(f"{r.table}: " + (f"skipped, {r.skipped}" if r.skipped else
                                           f"error, {r.error}"))  # fmt: skip
            continue
        head = [r.table, str(r.snapshot_id), str(s["buckets"]), str(s["files"])]
        head.append(str(s["total_bytes"]))
        if r.kind == APPEND:
            tail = [str(s["small_files"]), str(s["deleted_rows"])]
        else:
            tail = [
                str(s["level0_files"]),
                str(s["max_sorted_runs"]),
                f"{s['max_size_amplification_percent']:.1f}",
            ]
        lines[str(r.kind)].append(head + tail + _notes(r))
    blocks = [aligned(h, lines[k]) for h, k in ((lsm, PRIMARY_KEY), (append, APPEND)) if lines[k]]
    return "\n".join([line for block in blocks for line in block] + notes)


def _notes(row: TableOverview) -> list[str]:
    """A table line's trailing note: the modes refused and the options the census lacks."""
    notes = ["unsupported: " + "; ".join(row.unsupported)] if row.unsupported else []
    if row.unknown_options:
        notes.append("unknown options: " + ", ".join(row.unknown_options))
    return ["; ".join(notes)] if notes else []


TEXT = TextOutput()
JSON = JsonOutput()

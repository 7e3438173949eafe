"""The CLI's argument types: each parses and checks its flag before a command runs, so a bad
value is a usage error naming the flag, whatever else is wrong."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import click

from dagster_paimon.arguments import (
    duration_text,
    parse_duration,
    parse_identifier,
    parse_partition_spec,
)
from dagster_paimon.errors import InvalidArgumentError
from dagster_paimon.operations import Operation, Param


class Duration(click.ParamType):
    """`30s`, `15m`, `12h`, `7d` (Paimon's units; a bare number is milliseconds)."""

    name = "duration"

    def __init__(self, *, positive: bool = False):
        self.positive = positive

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """DURATION in usage lines."""
        return "DURATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """A timedelta, or a usage error naming the flag."""
        if isinstance(value, timedelta):
            return value
        try:
            duration = parse_duration(str(value))
        except InvalidArgumentError as e:
            self.fail(str(e), param, ctx)
        if self.positive and duration <= timedelta(0):
            self.fail("must be positive: younger files may belong to a commit", param, ctx)
        return duration


class PartitionSpec(click.ParamType):
    """`K=V[,K=V]` into a dict."""

    name = "partition"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """K=V[,K=V] in usage lines."""
        return "K=V[,K=V]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The spec as a dict, or a usage error naming the flag."""
        if isinstance(value, dict):
            return value
        try:
            return parse_partition_spec(str(value))
        except InvalidArgumentError as e:
            self.fail(str(e), param, ctx)


class OptionPair(click.ParamType):
    """`KEY=VALUE`: one table or catalog option (the value may hold "=")."""

    name = "option"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """KEY=VALUE in usage lines."""
        return "KEY=VALUE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """A (key, value) pair, or a usage error naming the flag."""
        if isinstance(value, tuple):
            return value
        key, sep, text = str(value).partition("=")
        if not sep or not key.strip():
            self.fail(f"{value!r} is not KEY=VALUE", param, ctx)
        return key.strip(), text.strip()


class Identifier(click.ParamType):
    """`DB.TABLE`, checked for shape only (whether it exists is the warehouse's to say)."""

    name = "identifier"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """DB.TABLE in usage lines."""
        return "DB.TABLE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The identifier, or a usage error naming the flag."""
        try:
            parse_identifier(str(value))
        except InvalidArgumentError as e:
            self.fail(str(e), param, ctx)
        return str(value)


class Timestamp(click.ParamType):
    """An ISO 8601 time (a naive one is UTC)."""

    name = "timestamp"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """ISO in usage lines."""
        return "ISO"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """A datetime, or a usage error naming the flag."""
        if isinstance(value, datetime):
            return value
        try:
            return datetime.fromisoformat(str(value))
        except ValueError:
            self.fail(f"{value!r} is not an ISO 8601 time", param, ctx)


COUNT = click.IntRange(min=1)

_TYPES: dict[str, Any] = {
    "count": COUNT,
    "int": int,
    "text": str,
    "timestamp": Timestamp(),
    "partition": PartitionSpec(),
    "partitions": PartitionSpec(),
    "options": OptionPair(),
}


def operation_options(operation: Operation) -> list[click.Parameter]:
    """The flags of an operation's command, each from its declaration (operations.py): the
    handler gets the door's keywords, repeatable ones as a list (None when not given) or a
    mapping."""
    return [_option(param) for param in operation.params]


def _option(param: Param) -> click.Option:
    """One declared parameter as a click option."""
    if param.kind == "flag":
        return click.Option([param.flag, param.name], is_flag=True, help=param.help)
    kind: Any = _TYPES.get(param.kind)
    if param.kind == "duration":
        kind = Duration(positive=param.positive)
    elif param.kind == "choice":
        kind = click.Choice(list(param.choices))
    default = param.default
    if isinstance(default, timedelta):
        default = duration_text(default)
    repeated = param.kind in ("partitions", "options")
    return click.Option(
        [param.flag, param.name],
        type=kind,
        default=default,
        show_default=default is not None,
        required=param.required,
        multiple=repeated,
        metavar=param.metavar,
        help=param.help,
        callback=_collected(param) if repeated else None,
    )


def _collected(param: Param) -> Any:
    """A repeatable flag's values as the door takes them: a list (or None) or a mapping."""

    def collect(_ctx: click.Context, _param: click.Parameter, values: tuple[Any, ...]) -> Any:
        if param.kind == "options":
            return dict(values)
        return list(values) or None

    return collect

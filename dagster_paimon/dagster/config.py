"""Run config of the operations' jobs, derived from their declarations (operations.py): the
fields are PaimonTable's keywords, so the UI's launchpad, the CLI and the library agree."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Literal

from dagster import Config
from pydantic import Field, create_model

from dagster_paimon.arguments import duration_text
from dagster_paimon.operations import Operation, Param, operation

_TYPES: dict[str, Any] = {
    "flag": bool,
    "count": int,
    "int": int,
    "text": str,
    "duration": str,
    "timestamp": str,
    "partition": dict[str, str],
    "partitions": list[dict[str, str]],
    "options": dict[str, str],
}
_SHOWN = {
    "duration": " (a Paimon duration: 30s, 15min, 12h, 7d)",
    "timestamp": " (ISO 8601; without an offset: UTC), e.g. 2024-05-01T12:00:00",
    "partition": " (K: V over partition keys)",
    "partitions": " (each K: V over some or all partition keys)",
}


def config_class(
    name: str,
    *,
    defaults: Mapping[str, Any] | None = None,
    leave_out: tuple[str, ...] = (),
) -> type[Config]:
    """The run config of operation `name`: one field per declared parameter but those left out
    (set by the job itself), with a job's own defaults where its purpose differs from the
    command line's (a scheduled manifest compaction is full)."""
    declared = operation(name)
    fields = {
        p.name: _field(p, (defaults or {}).get(p.name, p.default))
        for p in declared.params
        if p.name not in leave_out
    }
    model = create_model(  # type: ignore[call-overload]
        "".join(w.title() for w in name.split("-")) + "Config",
        __base__=Config,
        __doc__=declared.summary[0].upper() + declared.summary[1:] + ".",
        **fields,
    )
    return model


def _field(param: Param, default: Any) -> tuple[Any, Any]:
    """A parameter as a pydantic field: its type, its default, its help as description."""
    kind: Any = _TYPES.get(param.kind)
    if param.kind == "choice":
        kind = Literal[param.choices]
    if isinstance(default, timedelta):
        default = duration_text(default)
    description = param.help + _SHOWN.get(param.kind, "")
    if param.required:  # checked by the door, whose error the run reports
        return kind, Field(description=description)
    if default is None:
        kind = kind | None
    return kind, Field(default=default, description=description)


def arguments(declared: Operation, config: Config) -> dict[str, Any]:
    """The door's keywords from a run's config, durations and times parsed and checked."""
    return declared.arguments(config.model_dump())

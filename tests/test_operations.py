"""Each door against the operations' declarations: PaimonTable's keywords, the CLI's flags and
the Dagster run config are spelled as declared, so no name drifts between them."""

from __future__ import annotations

import inspect
from datetime import datetime, timedelta

import pytest

from dagster_paimon.cli import cli
from dagster_paimon.cli.shared import NAMES
from dagster_paimon.dagster.config import config_class
from dagster_paimon.errors import InvalidArgumentError
from dagster_paimon.operations import OPERATIONS, Operation, Param, operation
from dagster_paimon.paimon_table import PaimonTable

SPARK_FLAGS = {"spark_master", "spark_remote"}


@pytest.mark.parametrize("declared", OPERATIONS, ids=lambda o: o.name)
def test_the_door_takes_the_declared_keywords(declared: Operation):
    method = getattr(PaimonTable, declared.method)
    signature = inspect.signature(method)
    keywords = [name for name in signature.parameters if name != "self"]
    assert keywords == [p.name for p in declared.params]
    for param in declared.params:
        default = signature.parameters[param.name].default
        assert (default is inspect.Parameter.empty) == param.required, param.name
        if not param.required:
            assert default == param.default, param.name
    assert declared.result in str(signature.return_annotation)


@pytest.mark.parametrize("declared", OPERATIONS, ids=lambda o: o.name)
def test_the_command_has_the_declared_flags(declared: Operation):
    command = cli.commands[declared.name]
    own = [p for p in command.params if p.name not in NAMES | SPARK_FLAGS]
    assert [p.name for p in own] == [p.name for p in declared.params]
    assert [p.opts[0] for p in own] == [p.flag for p in declared.params]
    assert command.short_help == declared.summary


def test_every_table_command_but_ingest_is_declared():
    undeclared = set(cli.commands) - {o.name for o in OPERATIONS}
    assert undeclared == {"ingest", "tables"}  # data in, and the whole warehouse


@pytest.mark.parametrize(
    ("name", "left_out"),
    [("compact", ("partition",)), ("expire-snapshots", ()), ("rescale", ()), ("maintain", ())],
)
def test_the_run_config_has_the_declared_fields(name: str, left_out: tuple[str, ...]):
    config = config_class(name, leave_out=left_out)
    declared = [p.name for p in operation(name).params if p.name not in left_out]
    assert list(config.model_fields) == declared


def test_a_jobs_own_default_replaces_the_declared_one():
    config = config_class("compact-manifests", defaults={"full": True})
    assert config().full is True
    assert config_class("compact-manifests")().full is False


def test_run_config_values_become_the_doors_types():
    declared = operation("remove-orphans")
    assert declared.arguments({"older_than": "3d", "dry_run": True}) == {
        "older_than": timedelta(days=3),
        "dry_run": True,
    }
    assert declared.arguments({"older_than": config_class("remove-orphans")().older_than}) == {
        "older_than": timedelta(days=1)
    }
    rollback = operation("rollback")
    assert rollback.arguments({"timestamp": "2024-05-01T12:00:00"})["timestamp"] == datetime(
        2024, 5, 1, 12
    )


@pytest.mark.parametrize(
    ("param", "given", "message"),
    [
        (operation("remove-orphans").param("older_than"), "0s", "older_than must be positive"),
        (operation("rollback").param("timestamp"), "yesterday", "timestamp 'yesterday' is not"),
        (operation("compact").param("executor"), "yarn", "executor must be one of"),
        (Param("older_than", "duration", ""), "soon", "'soon' is not a duration"),
    ],
)
def test_a_bad_value_is_an_input_error_naming_it(param: Param, given: str, message: str):
    with pytest.raises(InvalidArgumentError, match=message):
        param.value(given)


def test_an_undeclared_keyword_is_refused():
    with pytest.raises(InvalidArgumentError, match=r"expire-tags takes no \['older_than'\]"):
        operation("expire-tags").arguments({"older_than": "1d"})

"""The census classifies every option key Paimon declares, once, and each refusal is real."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import pytest

from dagster_paimon.census.census import (
    CATALOG,
    REFUSED,
    STATUSES,
    TABLE,
    census,
    declared_keys,
    groups,
)
from dagster_paimon.census.extract import declared
from dagster_paimon.census.page import page
from dagster_paimon.cli import main
from dagster_paimon.kinds import compact_open_table
from dagster_paimon.table import TableRef, create_table, open_table
from dagster_paimon.unsupported import MODES
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon

DOCS = Path(__file__).resolve().parents[2] / "docs" / "options.md"
# modes found by a column's type, not by an option key
TYPE_MODES = {"VARIANT type", "BLOB type", "VECTOR type", "BLOB on an append table"}


def _classified() -> list[tuple[str, str, bool]]:
    """(role, key, declared) of every key the groups list, as often as they list it."""
    return [
        (group.get("role", TABLE), key, listed)
        for group in groups()
        for listed, field in ((True, "keys"), (False, "undeclared"))
        for key in group.get(field, [])
    ]


def test_every_declared_key_is_classified_once():
    classified = Counter((role, key) for role, key, _ in _classified())
    twice = sorted(k for k, n in classified.items() if n > 1)
    assert not twice, f"classified more than once: {twice}"
    keys = {(d.role, d.key) for d in declared_keys()}
    missing = sorted(keys - set(classified))
    assert not missing, f"keys Paimon declares that the census does not classify: {missing}"


def test_listed_keys_are_declared_and_undeclared_ones_are_not():
    keys = {(d.role, d.key) for d in declared_keys()}
    for role, key, listed in _classified():
        assert ((role, key) in keys) == listed, (role, key, listed)


def test_groups_are_well_formed():
    for group in groups():
        assert group["status"] in STATUSES, group
        assert group.get("role", TABLE) in (TABLE, CATALOG), group
        assert group["note"].strip(), group
        assert group.get("keys") or group.get("undeclared"), group
        assert (group["status"] == REFUSED) <= bool(group.get("refusal") or ".py" in group["note"])


def test_every_refusal_is_a_mode_that_refuses():
    named = {g["refusal"] for g in groups() if g.get("refusal")}
    modes = {m.name for m in MODES} | {"metastore", "catalog lock"}
    assert named <= modes, f"refusals naming no mode: {sorted(named - modes)}"
    unlisted = {m.name for m in MODES} - named - TYPE_MODES
    assert not unlisted, f"modes of unsupported.py no census group names: {sorted(unlisted)}"


def test_patterns_match_field_and_index_keys():
    known = census()
    assert known.entry("fields.amount.aggregate-function") is not None
    assert known.entry("file-index.bloom-filter.columns") is not None
    assert known.entry("a.key.no.paimon.has") is None
    assert known.entry("metastore", CATALOG) is not None


def test_the_page_is_the_census():
    assert DOCS.read_text(encoding="utf-8") == page(), (
        "docs/options.md is stale: python -m dagster_paimon.census.page > docs/options.md"
    )


JAVA = """
public class CoreOptions implements Serializable {
    public static final String FIELDS_PREFIX = "fields";
    public static final String AGG_FUNCTION = "aggregate-function";
    // key("commented.out")
    public static final ConfigOption<Boolean> WRITE_ONLY =
            key("write-only")
                    .booleanType()
                    .defaultValue(false)
                    .withFallbackKeys("write.compaction-skip")
                    .withDescription("If set to true; compactions are skipped (key(\\"x\\")).");
    @Immutable
    public static final ConfigOption<String> TYPE =
            ConfigOptions.key("type").stringType().noDefaultValue();
    public String fieldAggFunc(String fieldName) {
        return options.get(key(FIELDS_PREFIX + "." + fieldName + "." + AGG_FUNCTION).stringType());
    }
}
"""


def test_the_extractor_reads_keys_aliases_and_computed_keys():
    rows = [(d.key, d.field, d.alias_of) for d in declared(JAVA, "CoreOptions", TABLE)]
    assert rows == [
        ("write-only", "WRITE_ONLY", ""),
        ("write.compaction-skip", "WRITE_ONLY", "write-only"),
        ("type", "TYPE", ""),
        ("fields.*.aggregate-function", "fieldAggFunc()", ""),
    ]


@pytest.fixture
def unknown_option_table(warehouse):
    """An orders table that carries a key no Paimon release declares."""
    table = create_table(warehouse, orders_spec(**{"x.future-option": "on"}))
    for commit in range(2):
        write_with_pypaimon(table, orders_batch(commit))
    return table


def test_an_unknown_key_is_named_in_a_warning_and_the_operation_runs(
    unknown_option_table, warehouse, caplog
):
    ref = TableRef(warehouse, "db.orders")
    with caplog.at_level(logging.WARNING, logger="dagster_paimon.unsupported"):
        result = compact_open_table(open_table(warehouse, "db.orders"), ref, full=True)
    assert result.snapshot_id == 3
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("x.future-option" in w and "compaction" in w for w in warnings), warnings


def test_health_reports_an_unknown_key(unknown_option_table, warehouse, capsys):
    assert main(["health", "--warehouse", warehouse, "--table", "db.orders", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["unknown_options"] == ["x.future-option"]
    assert out["unsupported"] == []

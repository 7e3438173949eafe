"""The import arrows: adapters -> paimon_table -> maintenance, ingest -> lsm -> commit -> snapshot
-> io -> table, and every layer -> format, the one seam to pypaimon.

Each package may import only the layers below it; the Dagster, Spark and CLI adapters and
PaimonTable are the only modules that see the compaction package, and only through its public
`__init__`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "dagster_paimon"
BASE = {
    "arguments",
    "operations",
    "census",
    "errors",
    "options",
    "partition",
    "failpoints",
    "redaction",
    "results",
    "unsupported",
}
SEAM = "format"
ENGINE = {
    SEAM: {SEAM},
    "base": {"base"},
    "storage": {"base", "storage"},
    "table": {"base", "storage", "table"},
    "io": {"base", "storage", "table", "io"},
    "snapshot": {"base", "storage", "table", "io", "snapshot"},
    "commit": {"base", "storage", "table", "io", "snapshot", "commit"},
    "lsm.model": {"base", "table", "io", "snapshot", "commit", "lsm.model"},
    "lsm.merge": {"base", "io", "lsm.model", "lsm.merge"},
    "lsm.write": {
        "base",
        "storage",
        "table",
        "io",
        "snapshot",
        "commit",
        "lsm.model",
        "lsm.merge",
        "lsm.write",
    },
    "lsm.compaction": {
        "base",
        "storage",
        "table",
        "io",
        "snapshot",
        "commit",
        "lsm.model",
        "lsm.merge",
        "lsm.write",
        "lsm.compaction",
    },
    # the table kinds: health, compaction planning and what is due, over both engines
    "kinds": {
        "base",
        "storage",
        "table",
        "io",
        "snapshot",
        "commit",
        "lsm.model",
        "lsm.merge",
        "lsm.write",
        "lsm.compaction",
        "kinds",
    },
    "ingest": {
        "base",
        "storage",
        "table",
        "io",
        "snapshot",
        "commit",
        "lsm.model",
        "lsm.write",
        "ingest",
    },
    "maintenance": {"base", "storage", "table", "io", "snapshot", "commit", "maintenance"},
    "discovery": {"base", "storage", "table", "io", "snapshot", "discovery"},
    "overview": {
        "base",
        "storage",
        "table",
        "io",
        "snapshot",
        "commit",
        "lsm.model",
        "lsm.merge",
        "lsm.write",
        "lsm.compaction",
        "kinds",
        "discovery",
        "overview",
    },
}
# PaimonTable: one object over every engine layer, below the adapters
ENGINE["paimon_table"] = {*ENGINE, "paimon_table"}
# the layers that may use compaction, through `dagster_paimon.lsm.compaction` only
COMPACTION_USERS = {"paimon_table", "spark", "dagster", "cli"}
ADAPTERS = {"spark": {"spark"}, "dagster": {"dagster", "spark"}, "cli": {"cli", "spark"}}


def layer(module: str) -> str:
    """The layer a dotted module name (below dagster_paimon) belongs to."""
    parts = module.split(".")
    if parts[0] == "lsm" and len(parts) > 1:
        return f"lsm.{parts[1]}"
    return "base" if parts[0] in BASE else parts[0]


def imports(path: Path) -> list[str]:
    """Every dagster_paimon module a file imports, anywhere in it, without the prefix."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        prefix = "dagster_paimon."
        found += [n.removeprefix(prefix) for n in names if n.startswith(prefix)]
    return found


MODULES = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts)
    for p in ROOT.rglob("*.py")
    if p.name != "__init__.py"
)


@pytest.mark.parametrize("module", MODULES)
def test_imports_point_down_the_layers(module):
    path = ROOT / (module.replace(".", "/") + ".py")
    own = layer(module)
    for target in imports(path):
        allowed = set(ENGINE) | ADAPTERS[own] if own in ADAPTERS else ENGINE[own] | {SEAM}
        if own == SEAM:
            allowed = {SEAM}
        if own in COMPACTION_USERS:
            assert not target.startswith("lsm.compaction."), (
                f"{module} reaches into {target}; use dagster_paimon.lsm.compaction"
            )
        assert layer(target) in allowed, f"{module} ({own}) must not import {target}"


def pypaimon_imports(path: Path) -> list[str]:
    """Every pypaimon module a file imports, anywhere in it."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names]
    return [n for n in found if n == "pypaimon" or n.startswith("pypaimon.")]


@pytest.mark.parametrize("module", MODULES)
def test_only_the_seam_imports_pypaimon(module):
    path = ROOT / (module.replace(".", "/") + ".py")
    if layer(module) != SEAM:
        assert pypaimon_imports(path) == [], f"{module} imports pypaimon; take it from {SEAM}"


def test_the_seam_is_where_pypaimon_is_imported():
    assert any(pypaimon_imports(p) for p in (ROOT / SEAM).glob("*.py"))


def test_the_lsm_root_holds_only_subpackages():
    assert sorted(p.name for p in (ROOT / "lsm").iterdir() if p.suffix == ".py") == ["__init__.py"]


def test_every_top_level_export_resolves():
    import dagster_paimon

    for name in dagster_paimon.__all__:
        assert getattr(dagster_paimon, name) is not None, name

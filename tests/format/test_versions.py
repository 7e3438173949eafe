"""The pypaimon versions the seam supports: pyproject.toml's range, the lock, and the one installed.

`make test` runs this package and the seam's selection twice when the range's floor is not the
locked version: in `.venv` (the lock, the newest allowed) and in `.venv-oldest` (the floor, with
DAGSTER_PAIMON_PYPAIMON set to it); CONTRIBUTING.md has the command.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import dagster_paimon.format as seam

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(m.name for m in pkgutil.iter_modules(seam.__path__))


def declared() -> SpecifierSet:
    """pyproject.toml's range for pypaimon."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [r.specifier for r in map(Requirement, deps) if r.name == "pypaimon"]
    return spec


def locked() -> str:
    """The pypaimon version uv.lock pins."""
    packages = tomllib.loads((ROOT / "uv.lock").read_text())["package"]
    (found,) = [p["version"] for p in packages if p["name"] == "pypaimon"]
    return found


def test_the_range_has_a_floor_and_a_cap():
    operators = {s.operator for s in declared()}
    assert ">=" in operators, "a floor: `make test` runs the seam's tests under it"
    assert "<" in operators, "a cap: pypaimon moves its internals between minor releases"


def test_the_lock_is_inside_the_range_at_or_above_the_floor():
    spec = declared()
    (floor,) = [Version(s.version) for s in spec if s.operator == ">="]
    assert Version(locked()) in spec
    assert Version(locked()) >= floor


def test_the_installed_pypaimon_is_the_one_this_run_is_for():
    """The lock's in `.venv`; the floor in `.venv-oldest`, so that run really tests the floor."""
    expected = os.environ.get("DAGSTER_PAIMON_PYPAIMON") or locked()
    assert version("pypaimon") == expected
    assert Version(version("pypaimon")) in declared()


@pytest.mark.parametrize("module", MODULES)
def test_every_name_the_seam_exports_resolves(module):
    """A pypaimon release that moves a class fails here, naming it, not deep in a test."""
    loaded = importlib.import_module(f"{seam.__name__}.{module}")
    assert loaded.__all__, f"{module} exports nothing"
    for name in loaded.__all__:
        assert getattr(loaded, name) is not None, f"{module}.{name}"

"""The example code location loads, with every table's assets, checks, jobs and sensors."""

import os
import subprocess
import sys
from pathlib import Path

from dagster import Definitions

import definitions


def test_example_definitions_are_loadable():
    Definitions.validate_loadable(definitions.defs)


def test_every_table_has_ingest_compaction_check_and_sensor():
    defs = definitions.defs
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    for table in ("shop/orders", "shop/customer_profiles"):
        assert table in keys
        assert f"{table}/compaction" in keys
    checks = {c.name for c in graph.asset_check_keys}
    assert checks == {"lsm_health"}
    sensors = {s.name for s in defs.sensors}
    declared = {"shop_orders_compaction_sensor", "shop_customer_profiles_compaction_sensor"}
    assert declared <= sensors
    # the adopting component's sensor exists once its state was refreshed (dg, dagster dev)
    assert all(s.startswith("paimon_warehouse_sensor_") for s in sensors - declared)


def test_dagster_cli_validates_the_workspace(tmp_path):
    root = Path(definitions.__file__).resolve().parent
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "dagster"),
            "definitions",
            "validate",
            "-w",
            "workspace.yaml",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "DAGSTER_HOME": str(tmp_path), "PAIMON_WAREHOUSE": str(tmp_path / "wh")},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "All code locations passed validation" in result.stderr + result.stdout

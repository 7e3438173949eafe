"""The example code location loads, with every table's assets, checks, jobs and sensors, also on
a warehouse that does not hold the table its component adopts (or does not exist yet)."""

import json
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
    """As `dagster dev` loads it (DAGSTER_IS_DEV_CLI: the component lists the warehouse as the
    location loads), on a warehouse not created yet: pos.* matches nothing, which the example's
    defs.yaml allows."""
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
        env={
            **os.environ,
            "DAGSTER_HOME": str(tmp_path),
            "PAIMON_WAREHOUSE": str(tmp_path / "wh"),
            "DAGSTER_IS_DEV_CLI": "1",
        },
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "All code locations passed validation" in result.stderr + result.stdout
    assert "does not exist yet, no table matches include ['pos.*']" in result.stderr


LISTING = """
import json
from resources.refresh_state import refresh_state
refresh_state()  # as the Dockerfile and `dagster dev` do before serving the location
import definitions
defs = definitions.defs
keys = sorted(k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys())
print(json.dumps({"assets": keys, "schedules": sorted(s.name for s in defs.schedules)}))
"""


def test_the_example_loads_on_an_empty_warehouse(tmp_path):
    root = Path(definitions.__file__).resolve().parent
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", LISTING],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "DAGSTER_HOME": str(tmp_path), "PAIMON_WAREHOUSE": str(warehouse)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "no table of" in result.stderr and "adopting none" in result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    tables = ("shop/orders", "shop/customer_profiles")
    assert {*tables, *(f"{t}/compaction" for t in tables)} <= set(loaded["assets"])
    assert not [k for k in loaded["assets"] if k.startswith("pos/")]
    assert "shop_orders_expire_snapshots_schedule" in loaded["schedules"]
    assert not [s for s in loaded["schedules"] if s.startswith("pos_")]

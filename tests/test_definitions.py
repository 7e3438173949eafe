"""The example code location loads, with every table's assets, checks, jobs and sensors."""

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
    assert sensors == {"shop_orders_compaction_sensor", "shop_customer_profiles_compaction_sensor"}

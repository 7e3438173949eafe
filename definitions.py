"""The example code location: tables declared in Python (assets/, resources/, schedules/) and a
component adopting a table pypaimon writes (defs/), merged into one Definitions."""

import sys
from pathlib import Path

from dagster import Definitions, load_from_defs_folder

sys.path.insert(0, str(Path(__file__).resolve().parent))

from assets import ORDERS, PROFILES, orders_feed, profiles_feed
from dagster_paimon.dagster.factory import build_paimon_table_definitions
from resources import spark_resource, warehouse_resource
from schedules import maintenance

defs = Definitions.merge(
    build_paimon_table_definitions(ORDERS, orders_feed, single_run_backfill=False),
    build_paimon_table_definitions(PROFILES, profiles_feed),
    maintenance(),
    Definitions(resources={"warehouse": warehouse_resource(), "pyspark": spark_resource()}),
    load_from_defs_folder(path_within_project=Path(__file__).resolve().parent),
)

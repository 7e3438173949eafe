"""PaimonWarehouseComponent in a real `dg` project: YAML -> state -> definitions -> sensor -> run.

A warehouse holds tables pypaimon wrote (two partitioned, one not, one append-only). A temporary
dg project declares the component in defs.yaml; its state is refreshed as `dg utils
refresh-defs-state` does, and Dagster's own loader builds the definitions. A sensor tick adds
the Paimon partitions as dynamic partitions, records each table's health as an observation and
requests compaction of exactly the unhealthy partition; that run compacts it and pypaimon reads
the model back.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
import time
import uuid
from dataclasses import replace
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.maintenance.tags import create_tag, list_tags
from dagster_paimon.table import TableSpec, create_table, open_table
from resources.refresh_state import refresh_state
from tests.conftest import ORDERS_SCHEMA, orders_batch, orders_spec, write_with_pypaimon
from tests.lsm.kvmodel import read_rows

EVENTS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def build_warehouse(warehouse: str) -> dict:
    """shop.orders (2 partitions, dt=2024-01-01 over the trigger), shop.events (unpartitioned),
    sales.orders (partitioned, healthy) and shop.log, an append table of 6 small files (Paimon's
    coordinator compacts 5 or more); returns shop.orders' model."""
    orders = create_table(warehouse, replace(orders_spec(), database="shop"))
    model: dict = {}
    for commit in range(7):
        batch = orders_batch(commit)
        if commit >= 2:  # later commits only touch the first day: its buckets pile up runs
            batch = batch.filter(pa.compute.equal(batch.column("dt"), "2024-01-01"))
        write_with_pypaimon(orders, batch)
        model.update({(r["dt"], r["id"]): r for r in batch.to_pylist()})
    sales = create_table(
        warehouse, TableSpec("sales", "orders", ORDERS_SCHEMA, ("dt", "id"), 1, ("dt",))
    )
    write_with_pypaimon(sales, orders_batch(0))
    events = create_table(warehouse, TableSpec("shop", "events", EVENTS, ("id",), 1))
    write_with_pypaimon(events, pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=EVENTS))
    log = create_table(warehouse, TableSpec("shop", "log", EVENTS, (), -1))
    for commit in range(6):
        write_with_pypaimon(log, pa.table({"id": [commit], "v": [f"e{commit}"]}, schema=EVENTS))
    return model


def make_project(root: Path, attributes: str) -> str:
    """A dg project whose defs folder holds one component instance; returns its module."""
    module = f"proj_{uuid.uuid4().hex[:8]}"
    (root / "src" / module / "defs" / "warehouse").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""
            [project]
            name = "{module}"
            version = "0.0.1"

            [tool.dg]
            directory_type = "project"

            [tool.dg.project]
            root_module = "{module}"
            """
        )
    )
    (root / "src" / module / "__init__.py").write_text("")
    (root / "src" / module / "defs" / "__init__.py").write_text("")
    (root / "src" / module / "defs" / "warehouse" / "defs.yaml").write_text(
        "type: dagster_paimon.PaimonWarehouseComponent\nattributes:\n"
        + textwrap.indent(textwrap.dedent(attributes).strip(), "  ")
        + "\n"
    )
    sys.path.insert(0, str(root / "src"))
    return module


def load(root: Path) -> dg.Definitions:
    """The project's definitions through Dagster's own loader."""
    return dg.load_from_defs_folder(path_within_project=root)


ATTRIBUTES = """
warehouse:
  uri: "{{ env('TEST_PAIMON_WAREHOUSE') }}"
tables:
  include: ["shop.*", "sales.*"]
  exclude: ["*.tmp_*"]
compaction:
  sensor: true
  full_cron: "0 3 * * *"
expire_snapshots:
  cron: "20 * * * *"
"""


@pytest.fixture
def project(tmp_path, warehouse, monkeypatch):
    """The warehouse, the project, the model of shop.orders."""
    model = build_warehouse(warehouse)
    monkeypatch.setenv("TEST_PAIMON_WAREHOUSE", warehouse)
    root = tmp_path / "project"
    make_project(root, ATTRIBUTES)
    return root, warehouse, model


def test_state_then_definitions_then_sensor_then_compaction(project):
    root, warehouse, model = project
    assert load(root).resolve_asset_graph().get_all_asset_keys() == set(), "no state, no defs"
    refresh_state(root)
    defs = load(root)
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    tables = ("shop/orders", "shop/events", "sales/orders", "shop/log")
    assert keys == {*tables, *(f"{t}/compaction" for t in tables)}, "append tables adopted too"
    graph = defs.resolve_asset_graph()
    orders = graph.get(dg.AssetKey(["shop", "orders"]))
    assert not orders.is_materializable, "adopted tables are external assets"
    columns = orders.metadata["dagster/column_schema"].columns
    assert [c.name for c in columns] == ORDERS_SCHEMA.names
    checks = {k.name for k in graph.asset_check_keys}
    assert checks == {"lsm_health", "small_files"}
    assert len(graph.asset_check_keys) == 4
    assert graph.get(dg.AssetKey(["shop", "log"])).check_keys == {
        dg.AssetCheckKey(dg.AssetKey(["shop", "log"]), "small_files")
    }
    jobs = {j.name for j in defs.resolve_all_job_defs()}
    assert {"compact_shop_orders", "shop_orders_expire_snapshots"} <= jobs
    schedules = {s.name: s.cron_schedule for s in defs.schedules}
    assert schedules["shop_orders_full_compaction_schedule"] == "0 3 * * *"
    assert schedules["shop_orders_expire_snapshots_schedule"] == "20 * * * *"
    (sensor,) = defs.sensors

    logs = {
        "python_logs": {"managed_python_loggers": ["dagster_paimon"], "python_log_level": "INFO"}
    }
    with dg.instance_for_test(overrides=logs) as instance:
        (key,) = [k for k in defs.resources if k.startswith("paimon_warehouse_")]
        resources = {key: defs.resources[key]}
        orders = open_table(warehouse, "shop.orders")
        create_tag(orders, "release", snapshot_id=1)
        first_ms = orders.snapshot_manager().get_snapshot_by_id(1).time_millis
        before_ms = time.time() * 1000
        context = dg.build_sensor_context(instance=instance, resources=resources)
        result = sensor(context)
        after_ms = time.time() * 1000
        added = {
            r.partitions_def_name: set(r.partition_keys) for r in result.dynamic_partitions_requests
        }
        assert added == {
            "paimon_shop_orders": {"dt=2024-01-01", "dt=2024-01-02"},
            "paimon_sales_orders": {"dt=2024-01-01", "dt=2024-01-02"},
        }
        observed = {e.asset_key.to_user_string(): e.metadata for e in result.asset_events}
        assert set(observed) == set(tables)
        runs = observed["shop/orders"]["paimon/max_sorted_runs"].value
        assert runs == 7 and observed["shop/events"]["paimon/max_sorted_runs"].value == 1
        # retention metrics: partitions holding files, tags, the oldest snapshot's age
        assert observed["shop/orders"]["paimon/partitions"].value == 2
        assert observed["shop/orders"]["paimon/tags"].value == 1
        assert observed["shop/events"]["paimon/tags"].value == 0
        age = observed["shop/orders"]["paimon/oldest_snapshot_age_seconds"].value
        assert (before_ms - first_ms) / 1000 - 0.01 <= age <= (after_ms - first_ms) / 1000 + 0.01
        assert observed["shop/log"]["paimon/small_files"].value == 6
        assert observed["shop/log"]["paimon/files"].value == 6
        assert sorted((r.job_name, r.partition_key or "") for r in result.run_requests) == [
            ("compact_shop_log", ""),
            ("compact_shop_orders", "dt=2024-01-01"),
        ], "the append table's compaction is requested where Paimon's coordinator would run"
        for request in result.dynamic_partitions_requests:
            instance.add_dynamic_partitions(
                request.partitions_def_name, list(request.partition_keys)
            )
        again = sensor(
            dg.build_sensor_context(
                instance=instance,
                cursor=result.cursor,
                resources=resources,
            )
        )
        assert not again.run_requests, "the cursor keeps a tick from asking twice"
        later = {e.asset_key.to_user_string(): e.metadata for e in again.asset_events}
        assert later["shop/orders"]["paimon/tags"].value == 1
        assert later["shop/orders"]["paimon/oldest_snapshot_age_seconds"].value >= age

        job = defs.resolve_job_def("compact_shop_orders")
        run = job.execute_in_process(instance=instance, partition_key="dt=2024-01-01")
        assert run.success
        messages = [e.user_message for e in instance.all_logs(run.run_id)]
        assert any(m.startswith("compacted dt=2024-01-01 bucket") for m in messages), (
            "library progress logs reach the run logs"
        )
        log_rows = sorted(read_rows(open_table(warehouse, "shop.log")), key=lambda r: r["id"])
        assert (
            defs.resolve_job_def("compact_shop_log").execute_in_process(instance=instance).success
        )
        log = open_table(warehouse, "shop.log")
        assert [len(b.levels.all_files()) for b in read_levels(log).buckets] == [1]
        assert sorted(read_rows(log), key=lambda r: r["id"]) == log_rows
    table = open_table(warehouse, "shop.orders")
    first_day = [b for b in read_levels(table).buckets if b.partition.spec["dt"] == "2024-01-01"]
    assert all(b.levels.number_of_sorted_runs() <= 5 for b in first_day)
    got = {(r["dt"], r["id"]): r for r in read_rows(table)}
    assert got == model


def test_kinds_restrict_adoption_to_primary_key_tables(tmp_path, warehouse, monkeypatch):
    from typing import get_args

    from dagster_paimon.dagster.component import TableKind
    from dagster_paimon.table import TABLE_KINDS

    assert get_args(TableKind) == TABLE_KINDS, "the YAML's kinds are discovery's"
    build_warehouse(warehouse)
    monkeypatch.setenv("TEST_PAIMON_WAREHOUSE", warehouse)
    root = tmp_path / "pk_only"
    make_project(
        root,
        ATTRIBUTES.replace('exclude: ["*.tmp_*"]', 'exclude: ["*.tmp_*"]\n  kinds: [primary-key]'),
    )
    refresh_state(root)
    keys = {k.to_user_string() for k in load(root).resolve_asset_graph().get_all_asset_keys()}
    assert "shop/log" not in keys and "shop/orders" in keys
    typo = tmp_path / "typo_kind"
    make_project(
        typo, ATTRIBUTES.replace('exclude: ["*.tmp_*"]', 'exclude: ["*.tmp_*"]\n  kinds: [log]')
    )
    assert "kinds" in failure(typo)


def failure(root: Path) -> str:
    """The refresh's error and every error it was raised from, as one text."""
    with pytest.raises(Exception) as caught:
        refresh_state(root)
    texts, error = [], caught.value
    while error is not None:
        texts.append(f"{type(error).__name__}: {error}")
        error = error.__cause__ or error.__context__
    return "\n".join(texts)


def test_bad_configuration_is_a_specific_error(tmp_path, warehouse, monkeypatch):
    build_warehouse(warehouse)
    monkeypatch.setenv("TEST_PAIMON_WAREHOUSE", warehouse)
    typo = tmp_path / "typo"
    make_project(typo, ATTRIBUTES.replace("compaction:", "compactoin:"))
    assert "compactoin" in failure(typo) and "Extra inputs are not permitted" in failure(typo)
    nothing = tmp_path / "nothing"
    make_project(nothing, ATTRIBUTES.replace('["shop.*", "sales.*"]', '["crm.*"]'))
    message = failure(nothing)
    assert "TableNotFoundError: no table" in message
    assert "include ['crm.*'] exclude ['*.tmp_*'] kinds" in message and "allow_empty" in message
    gone = tmp_path / "gone"
    monkeypatch.setenv("TEST_PAIMON_WAREHOUSE", str(tmp_path / "missing"))
    make_project(gone, ATTRIBUTES)
    assert "WarehouseUnreachableError" in failure(gone)
    assert not list((gone / "src").rglob("state")), "a failed refresh writes no state"


def test_a_secret_among_catalog_options_is_refused_by_name(tmp_path, warehouse, monkeypatch):
    """`{{ env(...) }}` resolves to a plain string, which the Dagster UI would show."""
    monkeypatch.setenv("TEST_PAIMON_WAREHOUSE", warehouse)
    monkeypatch.setenv("TEST_SECRET", "s3cr3t-value")
    root = tmp_path / "secret"
    secret = "  catalog_options:\n    fs.s3.accessKeySecret: \"{{ env('TEST_SECRET') }}\"\n"
    make_project(root, ATTRIBUTES.replace("tables:", secret + "tables:", 1))
    message = failure(root)
    assert "InvalidOptionError" in message and "fs.s3.accessKeySecret" in message
    assert "s3cr3t-value" not in message


def test_dg_finds_the_component_through_the_registry_entry_point():
    """`dg list components` reads the dagster_dg_cli.registry_modules entry point."""
    from dagster.components.core.package_entry import discover_entry_point_package_objects

    keys = {f"{k.namespace}.{k.name}" for k in discover_entry_point_package_objects()}
    assert "dagster_paimon.PaimonWarehouseComponent" in keys


def test_scaffolding_writes_a_loadable_defs_yaml(warehouse):
    """`dg scaffold defs` output (through Dagster's sandbox) loads and adopts the tables."""
    from dagster.components.testing import create_defs_folder_sandbox

    from dagster_paimon import PaimonWarehouseComponent

    build_warehouse(warehouse)
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(
            component_cls=PaimonWarehouseComponent, scaffold_params={"uri": warehouse}
        )
        text = (path / "defs.yaml").read_text()
        assert text.startswith("type: dagster_paimon.") and "PaimonWarehouseComponent" in text
        assert f"uri: {warehouse}" in text and "full_cron: 0 2 * * *" in text
        with sandbox.build_component_tree() as tree:
            component = tree.load_component(path)
            asyncio.run(component.refresh_state(tree.project_root))
        with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
            keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"shop/orders", "shop/events", "sales/orders"} <= keys


def test_a_spark_connect_url_replaces_the_local_master():
    """pyspark refuses a master beside spark.remote: the component then sets neither default."""
    from pyspark.sql import SparkSession

    from dagster_paimon.dagster.component import CompactionArgs

    remote = {"spark.remote": "sc://127.0.0.1:15002"}
    config = CompactionArgs(executor="spark", spark_conf=remote).spark().spark_config
    assert config == remote
    SparkSession.builder.config(map=config)  # validates the URLs; starts nothing
    assert CompactionArgs().spark().spark_config["spark.master"] == "local[*]"


EMPTY_OK = ATTRIBUTES.replace('exclude: ["*.tmp_*"]', 'exclude: ["*.tmp_*"]\n  allow_empty: true')


def test_allow_empty_adopts_nothing_with_a_warning(tmp_path, warehouse, monkeypatch, caplog):
    """A pattern matching nothing, or a local warehouse not created yet: a warning, no defs."""
    build_warehouse(warehouse)
    monkeypatch.setenv("TEST_PAIMON_WAREHOUSE", warehouse)
    typo = tmp_path / "typo"
    make_project(typo, EMPTY_OK.replace('["shop.*", "sales.*"]', '["crm.*"]'))
    refresh_state(typo)
    defs = load(typo)
    assert not defs.resolve_asset_graph().get_all_asset_keys()
    assert not list(defs.schedules or []) and not list(defs.sensors or [])
    assert "matches include ['crm.*']" in caplog.text and "adopting none" in caplog.text
    caplog.clear()
    monkeypatch.setenv("TEST_PAIMON_WAREHOUSE", str(tmp_path / "not-yet"))
    fresh = tmp_path / "fresh"
    make_project(fresh, EMPTY_OK)
    refresh_state(fresh)
    assert not load(fresh).resolve_asset_graph().get_all_asset_keys()
    assert "does not exist yet" in caplog.text
    found = tmp_path / "found"  # allow_empty changes nothing when tables match
    monkeypatch.setenv("TEST_PAIMON_WAREHOUSE", warehouse)
    make_project(found, EMPTY_OK)
    refresh_state(found)
    keys = {k.to_user_string() for k in load(found).resolve_asset_graph().get_all_asset_keys()}
    assert {"shop/orders", "shop/events", "sales/orders"} <= keys


def test_schedules_default_status_is_set_in_yaml(tmp_path, warehouse, monkeypatch):
    build_warehouse(warehouse)
    monkeypatch.setenv("TEST_PAIMON_WAREHOUSE", warehouse)
    root = tmp_path / "status"
    attributes = ATTRIBUTES.replace('full_cron: "0 3 * * *"', "full_default_status: RUNNING")
    attributes = attributes.replace(
        'cron: "20 * * * *"', 'cron: "20 * * * *"\n  default_status: RUNNING'
    )
    attributes += "remove_orphans:\n  default_status: STOPPED\n"
    attributes += 'maintain:\n  cron: "50 * * * *"\n  default_status: RUNNING\n'
    make_project(root, attributes)
    refresh_state(root)
    schedules = {s.name: s for s in load(root).schedules}
    running = dg.DefaultScheduleStatus.RUNNING
    stopped = dg.DefaultScheduleStatus.STOPPED
    for table in ("shop_orders", "shop_events", "sales_orders"):
        assert schedules[f"{table}_full_compaction_schedule"].default_status == running
        assert schedules[f"{table}_expire_snapshots_schedule"].default_status == running
        assert schedules[f"{table}_expire_snapshots_schedule"].cron_schedule == "20 * * * *"
        for kind in ("expire_changelogs", "compact_manifests", "remove_orphans"):
            assert schedules[f"{table}_{kind}_schedule"].default_status == stopped
        assert schedules[f"{table}_maintain_schedule"].default_status == running
        assert schedules[f"{table}_maintain_schedule"].cron_schedule == "50 * * * *"
    # a schedule given only its status keeps the job's default cron
    assert schedules["shop_orders_remove_orphans_schedule"].cron_schedule == "0 5 * * 0"
    assert schedules["shop_orders_full_compaction_schedule"].cron_schedule == "0 2 * * *"


def schema_properties(schema: dict) -> dict[str, dict]:
    """Every property of every object in a JSON schema, its definitions included, by path."""
    out = {}
    for name, definition in [("component", schema), *schema.get("$defs", {}).items()]:
        for field, body in definition.get("properties", {}).items():
            out[f"{name}.{field}"] = body
    return out


def test_every_yaml_field_has_a_description_and_an_example():
    from dagster_paimon import PaimonWarehouseComponent

    schema = PaimonWarehouseComponent.get_model_cls().model_json_schema()
    properties = schema_properties(schema)
    nested = {path.split(".")[0] for path in properties}
    assert {"component", "WarehouseArgsModel", "S3ArgsModel", "TablesArgsModel"} <= nested
    assert {"CompactionArgsModel", "ScheduleArgsModel", "StateArgs"} <= nested
    assert len(properties) >= 25
    undocumented = [
        path
        for path, body in properties.items()
        if not str(body.get("description") or "").strip() or not body.get("examples")
    ]
    assert undocumented == []


MAINTAIN = """
maintain:
  options:
    partition.expiration-time: "1 d"
    tag.automatic-creation: batch
  tables:
    sales.orders:
      options:
        partition.expiration-time: "36500 d"
"""


def schema_files(warehouse: str, identifier: str) -> dict[str, str]:
    """A table's schema files, by name, with their content."""
    directory = Path(open_table(warehouse, identifier).table_path) / "schema"
    return {p.name: p.read_text() for p in sorted(directory.iterdir())}


def test_maintain_options_in_yaml_override_the_tables(tmp_path, warehouse, monkeypatch):
    """The tables set no tag or partition option: the YAML's make every pass create a batch tag
    and drop both (2024) days of shop.orders, while sales.orders' own entry keeps its days."""
    model = build_warehouse(warehouse)
    monkeypatch.setenv("TEST_PAIMON_WAREHOUSE", warehouse)
    root = tmp_path / "maintain"
    make_project(root, ATTRIBUTES + MAINTAIN)
    refresh_state(root)
    defs = load(root)
    schemas = {t: schema_files(warehouse, t) for t in ("shop.orders", "sales.orders")}
    sales_rows = read_rows(open_table(warehouse, "sales.orders"))
    assert model and sales_rows
    runs = {}
    with dg.instance_for_test() as instance:
        for table in ("shop_orders", "sales_orders", "shop_events"):
            job = defs.resolve_job_def(f"{table}_maintain")
            result = job.execute_in_process(instance=instance)
            assert result.success, table
            (output,) = [e for e in result.all_node_events if e.event_type_value == "STEP_OUTPUT"]
            runs[table] = output.event_specific_data.metadata["paimon/result"].value
    shop = runs["shop_orders"]
    assert shop["tag_creation"]["created"] and shop["partition_expiry"]["expired_partitions"] == [
        "dt=2024-01-01",
        "dt=2024-01-02",
    ]
    assert read_rows(open_table(warehouse, "shop.orders")) == []
    # the table's own entry beat the default: no partition of sales.orders expired
    sales = runs["sales_orders"]
    assert (
        sales["tag_creation"]["created"] and sales["partition_expiry"]["expired_partitions"] == []
    )
    assert read_rows(open_table(warehouse, "sales.orders")) == sales_rows
    # unpartitioned: partition expiry skipped, the tag made
    assert runs["shop_events"]["skipped"]["partition_expiry"] == "the table is not partitioned"
    assert [t.name for t in list_tags(open_table(warehouse, "shop.events"))]
    for table, files in schemas.items():
        assert schema_files(warehouse, table) == files, f"{table}'s schema changed"
    assert "tag.automatic-creation" not in open_table(warehouse, "shop.orders").table_schema.options


def load_failure(root: Path) -> str:
    """The load's error and every error it was raised from, as one text."""
    with pytest.raises(Exception) as caught:
        load(root)
    texts, error = [], caught.value
    while error is not None:
        texts.append(f"{type(error).__name__}: {error}")
        error = error.__cause__ or error.__context__
    return "\n".join(texts)


@pytest.mark.parametrize(
    ("yaml", "expected"),
    [
        (
            MAINTAIN.replace("tag.automatic-creation", "tag.automatic-creaton"),
            ("InvalidOptionError", "maintain options of ", "'tag.automatic-creaton'"),
        ),
        (
            MAINTAIN.replace('"36500 d"', '"a century"'),
            ("InvalidOptionError", "maintain options of sales.orders", "expiration-time"),
        ),
        (
            MAINTAIN.replace("sales.orders:", "sales.order:"),
            ("InvalidArgumentError", "maintain.tables names ['sales.order']"),
        ),
    ],
)
def test_a_bad_maintain_option_fails_the_load(tmp_path, warehouse, monkeypatch, yaml, expected):
    build_warehouse(warehouse)
    monkeypatch.setenv("TEST_PAIMON_WAREHOUSE", warehouse)
    root = tmp_path / "bad"
    make_project(root, ATTRIBUTES + yaml)
    refresh_state(root)
    message = load_failure(root)
    assert all(part in message for part in expected), message

"""A run the store failed transiently is retried by Dagster; a sensor tick it fails skips."""

from __future__ import annotations

import pyarrow as pa
import pytest
from dagster import DagsterInstance, Definitions, build_sensor_context, define_asset_job
from dagster_pyspark import LazyPySparkResource

from dagster_paimon.dagster.maintenance import build_maintenance_definitions
from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.dagster.sensors import build_compaction_sensor
from dagster_paimon.dagster.specs import PaimonTableSpec
from tests.conftest import write_with_pypaimon
from tests.faultproxy import LIST, METADATA_GET, SLOW_DOWN, Rule, fault_proxy
from tests.s3server import REGION

pytestmark = pytest.mark.s3

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
SPEC = PaimonTableSpec(
    "ops", "items", SCHEMA, ("id",), 1, options={"num-sorted-run.compaction-trigger": "2"}
)


@pytest.fixture
def proxied(s3_server, monkeypatch):
    """A warehouse resource reaching a fresh bucket through the fault proxy, with a table of
    three commits; retries without their waits."""
    monkeypatch.setenv("PAIMON_S3_RETRY_ATTEMPTS", "2")
    monkeypatch.setenv("PAIMON_S3_RETRY_BASE_MS", "1")
    monkeypatch.setenv("DAGSTER_PAIMON_RETRY_WAIT_S", "0")
    with fault_proxy(s3_server.endpoint) as proxy:
        resource = PaimonWarehouse(
            uri=f"s3://{s3_server.create_bucket()}/wh",
            s3_endpoint=proxy.endpoint,
            s3_region=REGION,
            s3_access_key_id=s3_server.access_key_id,
            s3_secret_access_key=s3_server.secret_access_key,
        )
        table = resource.create_table(SPEC)
        for c in range(3):
            rows = [{"id": i, "v": f"{c}"} for i in range(c * 5, c * 5 + 10)]
            write_with_pypaimon(table, pa.Table.from_pylist(rows, schema=SCHEMA))
        yield resource, proxy


def resources(warehouse: PaimonWarehouse) -> dict:
    """The warehouse, and the Spark resource the rescale job declares (never started here)."""
    return {"warehouse": warehouse, "pyspark": LazyPySparkResource(spark_config={})}


def events(result) -> list[str]:
    """The step event types of a run, in order."""
    return [e.event_type_value for e in result.all_node_events]


def test_a_maintenance_run_failed_transiently_is_retried_and_succeeds(proxied):
    resource, proxy = proxied
    defs = Definitions.merge(
        build_maintenance_definitions(SPEC), Definitions(resources=resources(resource))
    )
    # both attempts of the first run's first LIST are throttled: the step fails transiently
    rule = proxy.add(Rule(SLOW_DOWN, LIST, count=2))
    result = defs.resolve_job_def("ops_items_expire_snapshots").execute_in_process(
        instance=DagsterInstance.ephemeral()
    )
    assert rule.fired == 2
    assert result.success
    kinds = events(result)
    assert "STEP_UP_FOR_RETRY" in kinds and kinds.count("STEP_START") == 1
    assert kinds.index("STEP_UP_FOR_RETRY") < kinds.index("STEP_SUCCESS")


def test_other_failures_are_not_retried(proxied):
    resource, _ = proxied
    spec = PaimonTableSpec("ops", "missing", SCHEMA, ("id",), 1)
    defs = Definitions.merge(
        build_maintenance_definitions(spec), Definitions(resources=resources(resource))
    )
    result = defs.resolve_job_def("ops_missing_expire_snapshots").execute_in_process(
        instance=DagsterInstance.ephemeral(), raise_on_error=False
    )
    assert not result.success
    assert "STEP_UP_FOR_RETRY" not in events(result)


def test_a_tick_the_store_fails_skips_and_the_next_one_requests(proxied):
    resource, proxy = proxied
    job = define_asset_job("compact_ops_items", selection=[SPEC.compaction_asset_key])
    sensor = build_compaction_sensor(SPEC, job)
    instance = DagsterInstance.ephemeral()

    def tick():
        context = build_sensor_context(instance=instance, resources={"warehouse": resource})
        return sensor(context)

    proxy.add(Rule(SLOW_DOWN, METADATA_GET))
    skipped = tick()
    proxy.clear()
    message = str(skipped.skip_message)
    assert "unreadable this tick" in message
    # the proxy answers 503 SlowDown; metadata is read by boto3 (storage/arrow_s3.py), which
    # names the store's own code
    assert "SlowDown" in message, message
    assert "the table is unchanged" in message
    result = tick()
    assert [r.job_name for r in result.run_requests] == ["compact_ops_items"]

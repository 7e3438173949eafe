"""Issue 17: the S3 secret key never leaves the process in clear.

A moto user of its own gives the example deployment a random secret key; moto checks
signatures, so the deployment really authenticates with it. The deployment then ingests,
ticks its sensor, compacts on Spark, runs the five maintenance jobs, and fails runs with a
wrong key, all in one real Dagster instance; the CLI runs as the operators' subprocess. Both
keys are then searched for in every row of the instance's databases (compressed snapshots
unpacked), every file under its DAGSTER_HOME, the sensor's results, the GraphQL answer for
every resource, the CLI's output and the shared Spark session's event log.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import secrets
import sqlite3
import subprocess
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from dagster import DagsterInstance, Definitions, build_sensor_context, instance_for_test
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster_graphql.test.utils import execute_dagster_graphql, infer_repository_selector

from assets import ORDERS
from dagster_paimon.dagster.factory import compaction_job_name
from dagster_paimon.storage.s3 import ENV as S3_ENV
from dagster_paimon.storage.s3 import SECRET_ACCESS_KEY
from resources.warehouse import WAREHOUSE_ENV
from tests.s3server import S3Server

pytestmark = [pytest.mark.spark, pytest.mark.s3, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
LOCATION = "dagster_paimon_example"
SECRET_ENV = S3_ENV[SECRET_ACCESS_KEY]
DAY = "2024-01-01"
INGESTS = 4
MAINTENANCE = {
    "full_compaction": {},
    "expire_snapshots": {"retain_min": 1, "retain_max": 2},
    "expire_changelogs": {},
    "compact_manifests": {},
    "remove_orphans": {"older_than": "1 ms"},
}
RESOURCES = """
query Resources($selector: RepositorySelector!) {
  allTopLevelResourceDetailsOrError(repositorySelector: $selector) {
    __typename ... on ResourceDetailsList { results { name } }
  }
}
"""
RESOURCE = """
query Resource($selector: ResourceSelector!) {
  topLevelResourceDetailsOrError(resourceSelector: $selector) {
    __typename ... on ResourceDetails { name configuredValues { key value type } }
  }
}
"""
# (what it shows, arguments, the right key?): JSON and human output, library logs on stderr
CLI_RUNS = (
    ("health --json", ["health", "--json"], True),
    ("compact -v", ["compact", "--full", "-v"], True),
    ("health --json with a wrong key", ["health", "--json"], False),
    ("health -v with a wrong key", ["health", "-v"], False),
)


@dataclass
class Exposed:
    """Everything the deployment showed to the outside, by where it showed it."""

    keys: tuple[str, ...]
    texts: dict[str, str]

    def of(self, prefix: str) -> dict[str, str]:
        """The places under one heading."""
        return {k: v for k, v in self.texts.items() if k.startswith(prefix)}

    def leaks(self, prefix: str) -> dict[str, list[str]]:
        """The places under one heading that show a key: a few characters around each."""
        found: dict[str, list[str]] = {}
        for place, text in self.of(prefix).items():
            for key in self.keys:
                at = text.find(key)
                if at >= 0:
                    found.setdefault(place, []).append(text[max(0, at - 120) : at + 60])
        return found


def example_env(user: S3Server, bucket: str) -> dict[str, str]:
    """The variables the example deployment and the CLI read, for a warehouse on moto."""
    return {WAREHOUSE_ENV: f"s3://{bucket}/warehouse", **user.paimon_env()}


def op_config(op: str, **config) -> dict:
    return {"ops": {op: {"config": config}}}


def ingest(defs: Definitions, instance: DagsterInstance) -> bool:
    """One run of the orders ingest for DAY, as the UI launches it."""
    job = defs.resolve_implicit_global_asset_job_def()
    return job.execute_in_process(
        instance=instance,
        asset_selection=[ORDERS.asset_key],
        partition_key=DAY,
        raise_on_error=False,
    ).success


def compact(defs: Definitions, instance: DagsterInstance) -> bool:
    """The compaction job the sensor requests, its rewrites on Spark executors."""
    job = defs.resolve_job_def(compaction_job_name(ORDERS))
    return job.execute_in_process(
        instance=instance,
        partition_key=DAY,
        run_config=op_config("shop__orders__compaction", executor="spark"),
        raise_on_error=False,
    ).success


def maintain(defs: Definitions, instance: DagsterInstance) -> list[bool]:
    """Every maintenance job of the orders table once."""
    return [
        defs.resolve_job_def(f"shop_orders_{name}")
        .execute_in_process(
            instance=instance,
            run_config=op_config(f"shop_orders_{name}_op", **config),
            raise_on_error=False,
        )
        .success
        for name, config in MAINTENANCE.items()
    ]


def tick(defs: Definitions, instance: DagsterInstance, cursor: str | None = None):
    """One evaluation of the orders sensor."""
    sensor = defs.resolve_sensor_def("shop_orders_compaction_sensor")
    return sensor(build_sensor_context(instance=instance, resources=defs.resources, cursor=cursor))


def sqlite_rows(path: Path) -> Iterator[tuple[str, str]]:
    """Every row of every table of a SQLite database, zlib-compressed values unpacked."""
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):
                yield table, " | ".join(_readable(v) for v in row)


def _readable(value: object) -> str:
    """A column value as text: compressed blobs (Dagster's snapshots) unpacked."""
    if isinstance(value, bytes):
        with contextlib.suppress(zlib.error):
            value = zlib.decompress(value)
        return value.decode("utf-8", errors="replace")
    return str(value)


def instance_texts(home: Path) -> dict[str, str]:
    """Every database row and every other file of a Dagster home, by place."""
    texts: dict[str, str] = {}
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        place = f"instance {path.relative_to(home)}"
        if path.suffix == ".db":
            for table, row in sqlite_rows(path):
                texts[f"{place} {table}"] = texts.get(f"{place} {table}", "") + row + "\n"
        else:
            texts[place] = path.read_bytes().decode("utf-8", errors="replace")
    return texts


def graphql_resources(instance: DagsterInstance) -> dict[str, dict]:
    """The webserver's GraphQL answer for every top-level resource of the example location.

    Dagster reuses a `definitions` module already imported (by another test, without these
    variables); it is dropped so the location loads with this environment, as a server would.
    """
    sys.modules.pop("definitions", None)
    origin = InProcessCodeLocationOrigin(
        loadable_target_origin=LoadableTargetOrigin(
            python_file=str(ROOT / "definitions.py"), working_directory=str(ROOT)
        ),
        location_name=LOCATION,
    )
    target = InProcessWorkspaceLoadTarget(origin)
    with WorkspaceProcessContext(instance, target) as process:
        context = process.create_request_context()
        repository = infer_repository_selector(context)
        listed = execute_dagster_graphql(context, RESOURCES, {"selector": repository}).data
        names = [r["name"] for r in listed["allTopLevelResourceDetailsOrError"]["results"]]
        return {
            name: execute_dagster_graphql(
                context, RESOURCE, {"selector": {**repository, "resourceName": name}}
            ).data["topLevelResourceDetailsOrError"]
            for name in names
        }


def run_cli(env: dict[str, str], wrong: str) -> dict[str, subprocess.CompletedProcess]:
    """The operators' CLI as subprocesses, all at once, with the right key or a wrong one."""
    cli = str(Path(sys.executable).parent / "dagster-paimon")
    common = ["--warehouse", env[WAREHOUSE_ENV], "--table", ORDERS.identifier]
    processes = {
        name: subprocess.Popen(
            [cli, *argv, *common],
            env={**os.environ, **env, **({} if right else {SECRET_ENV: wrong})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, argv, right in CLI_RUNS
    }
    return {
        name: subprocess.CompletedProcess(p.args, p.wait(), *p.communicate())
        for name, p in processes.items()
    }


@pytest.fixture(scope="module")
def exposed(s3_server, spark, spark_event_log, tmp_path_factory) -> Exposed:
    """Run the example deployment with a recognizable secret, then collect what it showed."""
    user = s3_server.new_user("issue-17")
    wrong = "wrong" + secrets.token_urlsafe(30)
    bucket = user.create_bucket()
    home = tmp_path_factory.mktemp("dagster-home")
    overrides = yaml.safe_load((ROOT / "dagster.yaml").read_text())
    env = example_env(user, bucket)
    texts: dict[str, str] = {}
    with (
        pytest.MonkeyPatch.context() as patch,
        instance_for_test(temp_dir=str(home), overrides=overrides) as instance,
    ):
        for var, value in env.items():
            patch.setenv(var, value)
        defs = runpy.run_path(str(ROOT / "definitions.py"))["defs"]
        assert all(ingest(defs, instance) for _ in range(INGESTS))
        requested = tick(defs, instance)
        assert [r.partition_key for r in requested.run_requests] == [DAY]
        assert compact(defs, instance)
        texts["sensor tick"] = repr(requested)
        texts["sensor tick again"] = repr(tick(defs, instance, requested.cursor))
        assert all(maintain(defs, instance))
        patch.setenv(SECRET_ENV, wrong)
        texts["sensor tick with a wrong key"] = repr(tick(defs, instance))
        assert not ingest(defs, instance)
        assert not any(maintain(defs, instance))
        patch.setenv(SECRET_ENV, user.secret_access_key)
        resources = graphql_resources(instance)
    for name, answer in resources.items():
        texts[f"graphql resource {name}"] = json.dumps(answer)
    for name, done in run_cli(env, wrong).items():
        texts[f"cli {name} (exit {done.returncode}) stdout"] = done.stdout
        texts[f"cli {name} (exit {done.returncode}) stderr"] = done.stderr
    texts.update(instance_texts(home))
    for path in spark_event_log.iterdir():
        texts[f"spark event log {path.name}"] = path.read_text(errors="replace")
    return Exposed((user.secret_access_key, wrong), texts)


def test_the_dagster_instance_stores_no_secret(exposed):
    stored = exposed.of("instance ")
    assert any("shop__orders__compaction" in t for t in stored.values()), "runs were recorded"
    captured = [t for place, t in stored.items() if "compute_logs" in place]
    assert any("committed APPEND snapshot" in t for t in captured), "compute logs were captured"
    assert exposed.leaks("instance ") == {}


def test_graphql_shows_the_secret_as_an_env_var_name(exposed):
    answers = exposed.of("graphql ")
    warehouse = json.loads(answers["graphql resource warehouse"])
    values = {v["key"]: v for v in warehouse["configuredValues"]}
    assert values["s3_secret_access_key"] == {
        "key": "s3_secret_access_key",
        "value": SECRET_ENV,
        "type": "ENV_VAR",
    }
    assert exposed.leaks("graphql ") == {}


def test_sensor_results_show_no_secret(exposed):
    ticks = exposed.of("sensor ")
    assert "shop.orders is not there yet" in ticks["sensor tick with a wrong key"]
    assert exposed.leaks("sensor ") == {}


def test_cli_output_shows_no_secret(exposed):
    outputs = exposed.of("cli ")
    assert '"totals"' in outputs["cli health --json (exit 0) stdout"]
    assert "planned" in outputs["cli compact -v (exit 0) stderr"]
    assert (
        "rejected the S3 credentials" in outputs["cli health -v with a wrong key (exit 2) stderr"]
    )
    assert exposed.leaks("cli ") == {}


def test_the_spark_event_log_shows_no_secret(exposed):
    logs = exposed.of("spark event log ")
    assert any("compact shop.orders" in t for t in logs.values()), "the compaction ran on Spark"
    assert exposed.leaks("spark event log ") == {}

"""The example deployment in a real browser: `dagster dev` plus headless Chromium."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1600,1000",
    "--virtual-time-budget=25000",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {seconds} s")


@pytest.fixture
def dagster_dev(tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "DAGSTER_HOME": str(tmp_path / "home"),
        "PAIMON_WAREHOUSE": str(tmp_path / "warehouse"),
    }
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())
    # as `make run` does: an outside writer (pypaimon) fills the table the component adopts
    seeded = subprocess.run(
        [sys.executable, "resources/external.py"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert seeded.returncode == 0, seeded.stderr[-2000:]
    dagster = str(Path(sys.executable).parent / "dagster")
    process = subprocess.Popen(
        [dagster, "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(f"http://127.0.0.1:{port}/server_info", 120)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def chromium(*args: str, profile: Path) -> str:
    binary = shutil.which("chromium")
    assert binary, "Debian's chromium must be installed (make test installs it)"
    result = subprocess.run(
        [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result.stdout


def dom_showing(page: str, marker: str, profile: Path) -> str:
    """The page's DOM once it contains `marker` (the UI loads lazily), after a few tries."""
    dom = ""
    for _ in range(4):
        dom = chromium("--dump-dom", page, profile=profile)
        if marker in dom:
            break
        time.sleep(5)
    return dom


def screenshot(page: str, name: str, profile: Path) -> None:
    """A PNG of the page among the test artifacts, checked to be a real render."""
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / name
    chromium(f"--screenshot={shot}", page, profile=profile)
    assert shot.stat().st_size > 10_000


def test_asset_graph_shows_the_tables_and_their_compaction_assets(dagster_dev, tmp_path):
    page = f"{dagster_dev}/locations/dagster_paimon_example/asset-groups/shop"
    dom = dom_showing(page, "/assets/shop/customer_profiles/compaction", tmp_path / "chrome")
    for asset in (
        "shop/orders",
        "shop/orders/compaction",
        "shop/customer_profiles",
        "shop/customer_profiles/compaction",
    ):
        assert f"/assets/{asset}?" in dom or f'/assets/{asset}"' in dom, asset
    screenshot(page, "asset-graph.png", tmp_path / "chrome")


def graphql(url: str, query: str) -> dict:
    """One GraphQL request to the webserver."""
    request = urllib.request.Request(
        f"{url}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


OBSERVATIONS = """
{ assetOrError(assetKey: {path: ["pos", "sales"]}) {
    ... on Asset { assetObservations(limit: 5) { metadataEntries { label } } } } }
"""


def test_the_adopted_table_shows_the_sensors_health_observations(dagster_dev, tmp_path):
    """pos.sales, written by pypaimon and adopted in defs/pos/defs.yaml: the component's sensor
    (run by dagster dev's daemon) records its health, which its asset page shows."""
    deadline = time.monotonic() + 150
    observations: list = []
    while time.monotonic() < deadline and not observations:
        answer = graphql(dagster_dev, OBSERVATIONS)
        observations = answer["data"]["assetOrError"].get("assetObservations") or []
        time.sleep(3)
    assert observations, "the sensor recorded no observation of pos/sales"
    labels = {e["label"] for e in observations[0]["metadataEntries"]}
    assert {"paimon/max_sorted_runs", "paimon/files", "paimon/total_bytes"} <= labels
    page = f"{dagster_dev}/assets/pos/sales"
    dom = dom_showing(page, "paimon/max_sorted_runs", tmp_path / "chrome")
    assert "paimon/max_sorted_runs" in dom, "the asset page shows the observed health"
    screenshot(page, "adopted-table.png", tmp_path / "chrome")

"""Spark servers on loopback from the installed pyspark: a standalone cluster, a Connect server.

Each JVM runs in its own process group, so stopping it also stops what it started (a worker's
executors, their Python workers). Drivers using them run in subprocesses: one Python process
holds one SparkContext, and the suite's shared local session stays untouched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

from tests.s3server import free_port, free_ports, listening

SPARK_HOME = Path(pyspark.__file__).parent
CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"
WORKER_MEMORY = "1g"
START_TIMEOUT_S = 120
CLI_TIMEOUT_S = 300


def spark_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every Spark process here: pyspark as SPARK_HOME, loopback only, this venv's Python."""
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        **(extra or {}),
    }


@dataclass(frozen=True)
class Daemon:
    """A started JVM and the file its output goes to."""

    process: subprocess.Popen
    log: Path

    def check_alive(self) -> None:
        """Fail with the end of its log if it exited."""
        if self.process.poll() is not None:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.log.name}: exited {self.process.returncode}\n{tail}")

    def stop(self) -> None:
        """SIGTERM to its whole process group, SIGKILL if it lingers."""
        for sig, wait_s in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue


@contextmanager
def daemon(argv: list[str], log: Path) -> Iterator[Daemon]:
    """Start a JVM in a new process group; stop the group on exit."""
    with open(log, "wb") as out:
        process = subprocess.Popen(
            argv, env=spark_env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    started = Daemon(process, log)
    try:
        yield started
    finally:
        started.stop()


def wait_until(ready: Callable[[], bool], daemons: list[Daemon], what: str) -> None:
    """Poll `ready` while every daemon lives, up to START_TIMEOUT_S."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        for d in daemons:
            d.check_alive()
        if ready():
            return
        time.sleep(0.5)
    raise RuntimeError(f"{what} not ready within {START_TIMEOUT_S}s")


def alive_workers(webui_port: int) -> int:
    """How many workers the master's JSON page lists as alive (0 while it is not up, or while
    the port still answers with something else than the master's JSON)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui_port}/json", timeout=2) as page:
            state = json.load(page)
    except (OSError, ValueError):
        return 0
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


@dataclass(frozen=True)
class Cluster:
    """A running standalone cluster: its master URL and each worker's work directory."""

    master: str
    work_dirs: tuple[Path, ...]

    def app_dirs(self) -> list[set[str]]:
        """Per worker, the applications it ran executors for."""
        return [{p.name for p in w.glob("app-*")} for w in self.work_dirs]


@contextmanager
def standalone_cluster(root: Path, workers: int = 2) -> Iterator[Cluster]:
    """A master and `workers` workers of one core and WORKER_MEMORY each, on free ports."""
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    # every port chosen at once: one picked while the master's JVM had not yet bound its UI port
    # could be that port again, and a worker's UI then answered for the master's
    port, webui, *worker_ports = free_ports(2 + 2 * workers)
    master = f"spark://127.0.0.1:{port}"
    with ExitStack() as stack:
        started = [
            stack.enter_context(
                daemon(
                    [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(port), "--webui-port", str(webui)],
                    root / "master.log",
                )
            )
        ]  # fmt: skip
        work_dirs = []
        for i in range(workers):
            work = root / f"worker-{i}"
            work.mkdir()
            work_dirs.append(work)
            argv = [
                spark_class, "org.apache.spark.deploy.worker.Worker", master,
                "--host", "127.0.0.1", "--port", str(worker_ports[2 * i]),
                "--webui-port", str(worker_ports[2 * i + 1]), "--cores", "1",
                "--memory", WORKER_MEMORY,
                "--work-dir", str(work),
            ]  # fmt: skip
            started.append(stack.enter_context(daemon(argv, root / f"worker-{i}.log")))
        wait_until(lambda: alive_workers(webui) == workers, started, f"{workers} Spark workers")
        yield Cluster(master, tuple(work_dirs))


@contextmanager
def connect_server(root: Path, event_log: Path) -> Iterator[str]:
    """A Spark Connect server on local[2] writing its event log (uncompressed) to `event_log`;
    yields its sc:// URL.

    Its Python workers run PYSPARK_PYTHON of its environment (this venv's, from spark_env):
    Connect's Python functions ignore spark.pyspark.python.
    """
    port = free_port()
    argv = [
        str(SPARK_HOME / "bin" / "spark-submit"), "--class", CONNECT_SERVER,
        "--master", "local[2]",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", "spark.sql.shuffle.partitions=2",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.eventLog.enabled=true",
        "--conf", f"spark.eventLog.dir={event_log}",
        "--conf", "spark.eventLog.compress=false",
        "--conf", "spark.eventLog.rolling.enabled=false",
        "spark-internal",
    ]  # fmt: skip
    with daemon(argv, root / "connect.log") as server:
        wait_until(lambda: listening(port), [server], "Spark Connect server")
        yield f"sc://127.0.0.1:{port}"


# One process, so one Spark driver (or Connect client) for every command; JSON lines out.
CLI_DRIVER = """
import json, sys
from dagster_paimon.cli import main
for argv in json.loads(sys.argv[1]):
    if main([*argv, "--json"]) != 0:
        sys.exit(1)
"""


def run_cli(*commands: list[str], env: Mapping[str, str] | None = None) -> list[dict]:
    """`dagster-paimon` commands run in turn by a separate Python process; each one's JSON."""
    done = subprocess.run(
        [sys.executable, "-c", CLI_DRIVER, json.dumps(commands)],
        env=spark_env(env),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )
    assert done.returncode == 0, f"{commands}: exit {done.returncode}\n{done.stderr[-4000:]}"
    printed = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(printed) == len(commands), done.stdout
    return printed

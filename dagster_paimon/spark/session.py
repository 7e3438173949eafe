"""One way to build a Spark session that can run our Python data source and executor tasks."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from dagster_paimon.spark.source import register

DEFAULT_MASTER = "local[*]"
MIN_LOCAL_SHUFFLE_PARTITIONS = 4
QUIET_LOG_CONFIG = "log4j2-quiet.properties"


def spark_session(
    master: str = DEFAULT_MASTER,
    app_name: str = "dagster-paimon",
    conf: Mapping[str, str] | None = None,
    *,
    remote: str | None = None,
    quiet: bool = False,
) -> SparkSession:
    """A session whose Python workers run this interpreter, with Arrow on and the UI off.

    Executors import dagster_paimon, so they must use this environment's Python; local masters
    get a few shuffle partitions per core, since each partition costs a task. `remote`
    (`sc://host:port`) gives a Spark Connect session instead: the server's own configuration
    decides its Python, `conf` sets session options. The `paimon` data source is registered on
    the session returned (also if it already existed). `quiet` turns Spark's own logging off
    from JVM start (a CLI prints its own errors).
    """
    builder = _connect(remote) if remote else _classic(master, quiet)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.appName(app_name).getOrCreate()
    if quiet and not remote:
        spark.sparkContext.setLogLevel("OFF")
    register(spark)
    return spark


def _connect(remote: str) -> SparkSession.Builder:
    """A Spark Connect client of `remote`: no JVM here, the server runs every job."""
    return SparkSession.builder.remote(remote)


def _classic(master: str, quiet: bool) -> SparkSession.Builder:
    """A driver JVM in this process for `master`, its executors running this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if quiet:
        config = Path(__file__).with_name(QUIET_LOG_CONFIG)
        builder = builder.config(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={config}"
        )
    if master.startswith("local"):
        builder = builder.config("spark.sql.shuffle.partitions", str(_local_partitions(master)))
    return builder


def _local_partitions(master: str) -> int:
    """Two shuffle partitions per local core (at least 4), not Spark's 200 tiny tasks."""
    cores = master.removeprefix("local").strip("[]").split(",")[0]
    count = int(cores) if cores.isdigit() else (os.cpu_count() or 1)
    return max(MIN_LOCAL_SHUFFLE_PARTITIONS, 2 * count)


def activate(spark: SparkSession) -> None:
    """Make `spark` the active session of this thread's JVM side.

    Spark resolves Python data sources through the thread's active session; a thread that
    only received a DataFrame (a Dagster op, a worker thread) has none, and `format("paimon")`
    would not be found. Spark Connect sessions have no JVM side and need nothing.
    """
    jvm = getattr(spark, "_jvm", None)
    if jvm is not None:
        SparkSession._get_j_spark_session_class(jvm).setActiveSession(spark._jsparkSession)

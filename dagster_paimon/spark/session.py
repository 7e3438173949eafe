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
    quiet: bool = False,
) -> SparkSession:
    """A session whose Python workers run this interpreter, with Arrow on and the UI off.

    Executors import dagster_paimon, so they must use this environment's Python; local masters
    get a few shuffle partitions per core, since each partition costs a task. The
    `paimon` data source is registered on the session returned (also if it already existed).
    `quiet` turns Spark's own logging off from JVM start (a CLI prints its own errors).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
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
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark


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

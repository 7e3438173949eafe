"""One way to build a Spark session that can run our Python data source and executor tasks."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from dagster_paimon.spark.source import register

DEFAULT_MASTER = "local[*]"
LOCAL_SHUFFLE_PARTITIONS = 4


def spark_session(
    master: str = DEFAULT_MASTER,
    app_name: str = "dagster-paimon",
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A session whose Python workers run this interpreter, with Arrow on and the UI off.

    Executors import dagster_paimon, so they must use this environment's Python; local masters
    get few shuffle partitions, since the data is small and each partition costs a task. The
    `paimon` data source is registered on the session returned (also if it already existed).
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
    if master.startswith("local"):
        builder = builder.config("spark.sql.shuffle.partitions", str(LOCAL_SHUFFLE_PARTITIONS))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark


def activate(spark: SparkSession) -> None:
    """Make `spark` the active session of this thread's JVM side.

    Spark resolves Python data sources through the thread's active session; a thread that
    only received a DataFrame (a Dagster op, a worker thread) has none, and `format("paimon")`
    would not be found. Spark Connect sessions have no JVM side and need nothing.
    """
    jvm = getattr(spark, "_jvm", None)
    if jvm is not None:
        SparkSession._get_j_spark_session_class(jvm).setActiveSession(spark._jsparkSession)

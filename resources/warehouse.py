"""The example deployment's resources, configured from environment variables."""

import os
import sys
from pathlib import Path

from dagster_pyspark import LazyPySparkResource

from dagster_paimon.dagster.resources import PaimonWarehouse

WAREHOUSE_ENV = "PAIMON_WAREHOUSE"
SPARK_MASTER_ENV = "PAIMON_SPARK_MASTER"


def warehouse_uri() -> str:
    """$PAIMON_WAREHOUSE, defaulting to ./.warehouse beside this deployment."""
    default = Path(__file__).resolve().parent.parent / ".warehouse"
    return os.environ.get(WAREHOUSE_ENV) or str(default)


def warehouse_resource() -> PaimonWarehouse:
    """Local path or s3:// URI; S3 endpoint/region/keys from the PAIMON_S3_* variables if set."""
    return PaimonWarehouse(
        uri=warehouse_uri(),
        s3_endpoint=os.environ.get("PAIMON_S3_ENDPOINT"),
        s3_region=os.environ.get("PAIMON_S3_REGION"),
        s3_access_key_id=os.environ.get("PAIMON_S3_ACCESS_KEY_ID"),
        s3_secret_access_key=os.environ.get("PAIMON_S3_SECRET_ACCESS_KEY"),
    )


def spark_resource() -> LazyPySparkResource:
    """A local Spark session started on first use, running this environment's Python."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return LazyPySparkResource(
        spark_config={
            "spark.master": os.environ.get(SPARK_MASTER_ENV, "local[2]"),
            "spark.pyspark.python": sys.executable,
            "spark.sql.execution.arrow.pyspark.enabled": "true",
            "spark.sql.shuffle.partitions": "4",
            "spark.ui.enabled": "false",
        }
    )

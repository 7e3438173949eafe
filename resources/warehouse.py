"""The example deployment's resources, configured from environment variables."""

import os
import sys
from pathlib import Path

from dagster import EnvVar
from dagster_pyspark import LazyPySparkResource

from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.storage.s3 import (
    ACCESS_KEY_ID,
    ENV,
    SECRET_ACCESS_KEY,
    SESSION_TOKEN,
    S3Settings,
)

WAREHOUSE_ENV = "PAIMON_WAREHOUSE"
SPARK_MASTER_ENV = "PAIMON_SPARK_MASTER"


def warehouse_uri() -> str:
    """$PAIMON_WAREHOUSE, defaulting to ./.warehouse beside this deployment."""
    default = Path(__file__).resolve().parent.parent / ".warehouse"
    return os.environ.get(WAREHOUSE_ENV) or str(default)


def _key(option: str, value: str | None) -> EnvVar | None:
    """The variable that gave a key, as an EnvVar; None leaves keys to boto3's chain."""
    return EnvVar(ENV[option]) if value else None


def warehouse_resource() -> PaimonWarehouse:
    """Local path or s3:// URI; S3 settings from the PAIMON_S3_* variables the CLI reads too.

    Keys are EnvVars: each run reads them when it starts, and the UI shows only their names.
    Unset keys leave credentials to boto3's chain (AWS_ACCESS_KEY_ID, a profile, a role).
    """
    s3 = S3Settings.from_env(os.environ)
    return PaimonWarehouse(
        uri=warehouse_uri(),
        s3_endpoint=s3.endpoint,
        s3_region=s3.region,
        s3_access_key_id=_key(ACCESS_KEY_ID, s3.access_key_id),
        s3_secret_access_key=_key(SECRET_ACCESS_KEY, s3.secret_access_key),
        s3_session_token=_key(SESSION_TOKEN, s3.session_token),
        s3_path_style=s3.path_style,
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

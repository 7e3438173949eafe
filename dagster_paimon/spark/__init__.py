"""PySpark integration: the `paimon` data source, bucketed ingest, a compaction executor.

Register the source on a session, then write and read tables by name::

    register(spark)
    df.write.format("paimon").option("warehouse", uri).mode("append").save("db.table")
    spark.read.format("paimon").option("warehouse", uri).load("db.table")

Names resolve lazily: starting a session (`dagster_paimon.spark.session`) loads neither
pypaimon nor the source, so the driver JVM boots while they import.
"""

from dagster_paimon.lazy import lazy_getattr

_EXPORTS = {
    "PaimonDataSource": "dagster_paimon.spark.source",
    "register": "dagster_paimon.spark.source",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)

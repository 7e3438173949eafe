"""PySpark integration: the `paimon` data source, bucketed ingest, a compaction executor.

Register the source on a session, then write and read tables by name::

    register(spark)
    df.write.format("paimon").option("warehouse", uri).mode("append").save("db.table")
    spark.read.format("paimon").option("warehouse", uri).load("db.table")
"""

from dagster_paimon.spark.source import PaimonDataSource, register

__all__ = ["PaimonDataSource", "register"]

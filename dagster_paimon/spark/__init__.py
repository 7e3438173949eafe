"""PySpark integration: the `paimon` data source, bucketed ingest, a compaction executor.

Register the source on a session, then write and read tables by name::

    register(spark)
    df.write.format("paimon").option("warehouse", uri).mode("append").save("db.table")
    spark.read.format("paimon").option("warehouse", uri).load("db.table")

Names resolve lazily: starting a session (`dagster_paimon.spark.session`) loads neither
pypaimon nor the source, so the driver JVM boots while they import.
"""

import importlib

_EXPORTS = {
    "PaimonDataSource": "dagster_paimon.spark.source",
    "register": "dagster_paimon.spark.source",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    """Import the module that defines `name` on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dagster_paimon.spark' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

"""The LSM engine: pure Python and Arrow over pypaimon's format, no Dagster, no Spark."""

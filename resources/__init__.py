"""Example deployment resources, configured from environment variables."""

from resources.warehouse import WAREHOUSE_ENV, spark_resource, warehouse_resource, warehouse_uri

__all__ = ["WAREHOUSE_ENV", "spark_resource", "warehouse_resource", "warehouse_uri"]

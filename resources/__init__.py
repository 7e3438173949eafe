"""Example deployment resources, configured from environment variables."""

from resources.warehouse import WAREHOUSE_ENV, warehouse_uri

__all__ = ["WAREHOUSE_ENV", "warehouse_uri"]

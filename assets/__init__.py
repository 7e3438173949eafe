"""Example deployment assets: the tables of a small shop."""

from assets.shop import ORDERS, orders_table

__all__ = ["ORDERS", "orders_table"]

"""Example deployment assets: the tables of a small shop and their feeds."""

from assets.shop import ORDERS, PROFILES, orders_feed, profiles_feed

__all__ = ["ORDERS", "PROFILES", "orders_feed", "profiles_feed"]

"""Example deployment maintenance: full compaction, expiry, manifests and orphans per table."""

from dagster import Definitions

from assets import ORDERS, PROFILES
from dagster_paimon.dagster.maintenance import build_maintenance_definitions


def maintenance() -> Definitions:
    """Every shop table's maintenance jobs and schedules."""
    return Definitions.merge(*(build_maintenance_definitions(t) for t in (ORDERS, PROFILES)))


__all__ = ["maintenance"]

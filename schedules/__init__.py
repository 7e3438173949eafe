"""Example deployment maintenance: full compaction, expiry, manifests and orphans per table."""

from dagster import DefaultScheduleStatus, Definitions

from assets import ORDERS, PROFILES
from dagster_paimon.dagster.maintenance import build_maintenance_definitions


def maintenance(
    default_status: DefaultScheduleStatus = DefaultScheduleStatus.STOPPED,
) -> Definitions:
    """Every shop table's maintenance jobs and schedules, stopped until switched on in the UI
    (or RUNNING from the start with `default_status`)."""
    return Definitions.merge(
        *(
            build_maintenance_definitions(t, default_status=default_status)
            for t in (ORDERS, PROFILES)
        )
    )


__all__ = ["maintenance"]

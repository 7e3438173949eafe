"""Example deployment schedules."""

from schedules.health import health_schedule

__all__ = ["health_schedule"]

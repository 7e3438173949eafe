"""Dagster adapters: resources, table specs, assets, checks, sensors and schedules."""

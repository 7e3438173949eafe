"""Record the example tables' LSM health every hour."""

from dagster import AssetSelection, ScheduleDefinition, define_asset_job

health_job = define_asset_job("record_table_health", selection=AssetSelection.groups("shop"))

health_schedule = ScheduleDefinition(job=health_job, cron_schedule="0 * * * *")

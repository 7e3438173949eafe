"""Warehouse storage: where files live and how a snapshot is created atomically per store."""

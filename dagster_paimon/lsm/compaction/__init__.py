"""Compaction: strategies, task plans, task execution, executors and the table-wide run."""

"""Snapshot commits: one producer per operation, conflict checks, retry, "did my commit land"."""

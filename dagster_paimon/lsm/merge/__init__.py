"""Merging records of one key: the k-way merge, key groups and every merge engine."""

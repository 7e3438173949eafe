"""Field aggregators of the aggregation (and partial-update) merge engine."""

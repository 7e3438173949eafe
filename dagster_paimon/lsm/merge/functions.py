"""Merge functions (MergeFunction.java): what one key's records merge into, for all keys at once.

A merge function only sees keys with two or more records; a lone record passes through unchanged
(ReducerMergeFunctionWrapper). Deduplicate and first-row pick a record; aggregation (and
partial-update, in partial_update.py) fold every record of a key into a new one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from dagster_paimon.errors import MergeError
from dagster_paimon.io.kv import DELETE, INSERT
from dagster_paimon.lsm.merge.aggregate.aggregators import AggState, FieldAggregator
from dagster_paimon.lsm.merge.key_groups import (
    GroupWalk,
    KeyGroups,
    replace_where,
    scatter,
    valid_mask,
)


@dataclass(frozen=True)
class MergeOutput:
    """One result per key: the winning record's position (-1: none) or newly computed records."""

    picked: np.ndarray | None = None
    records: pa.Table | None = None


class MergeFunction(ABC):
    """Merges the records of many keys at once; one subclass per merge engine."""

    @abstractmethod
    def merge(self, groups: KeyGroups) -> MergeOutput:
        """One result per key of `groups`."""


class DeduplicateMergeFunction(MergeFunction):
    """DeduplicateMergeFunction: the latest record wins (with ignore-delete, the latest add)."""

    def __init__(self, ignore_delete: bool) -> None:
        self.ignore_delete = ignore_delete

    def merge(self, groups: KeyGroups) -> MergeOutput:
        """Each key's last record (last add with ignore-delete)."""
        if self.ignore_delete:
            return MergeOutput(picked=groups.last_where(~groups.retract))
        return MergeOutput(picked=groups.ends - 1)


class FirstRowMergeFunction(MergeFunction):
    """FirstRowMergeFunction: the first add wins; retractions fail unless ignore-delete."""

    def __init__(self, ignore_delete: bool) -> None:
        self.ignore_delete = ignore_delete

    def merge(self, groups: KeyGroups) -> MergeOutput:
        """Each key's first add."""
        if not self.ignore_delete and groups.retract.any():
            raise MergeError(
                "the first-row merge engine cannot accept DELETE/UPDATE_BEFORE records; "
                "set 'ignore-delete' = 'true' to ignore them"
            )
        return MergeOutput(picked=groups.first_where(~groups.retract))


def check_not_null(
    inputs: Mapping[str, pa.Array], mask: np.ndarray, nullable: Mapping[str, bool]
) -> None:
    """Java's "Field i can not be null" for records under `mask` (initRow, partial updates)."""
    if not mask.any():
        return
    for name, column in inputs.items():
        if not nullable[name] and (mask & ~valid_mask(column)).any():
            raise MergeError(f"field '{name}' can not be null")


def apply_where(
    mask: np.ndarray,
    function: Callable[[pa.Array, pa.Array, np.ndarray], AggState],
    acc: pa.Array,
    inp: pa.Array,
    seen: np.ndarray,
) -> AggState:
    """Apply an aggregator method only to the keys under `mask`, so nothing else can fail."""
    if mask.all():
        return function(acc, inp, seen)
    if not mask.any():
        return acc, seen
    selected = pa.array(mask)
    new_acc, new_seen = function(acc.filter(selected), inp.filter(selected), seen[mask])
    return scatter(acc, mask, new_acc), scatter(seen, mask, new_seen)


_DELETE = ("flag", "delete")


def _retract_as_agg(aggregator: FieldAggregator) -> Callable[..., AggState]:
    """Give `retract` the agg signature (it never touches `seen`)."""
    return lambda acc, inp, seen: (aggregator.retract(acc, inp), seen)


class AggregateMergeFunction(MergeFunction):
    """AggregateMergeFunction: every field folds its own aggregator over the key's records.

    With aggregation.remove-record-on-delete a -D resets the row to that record and makes the
    result a DELETE until a later record; aggregators keep their first_value flags across it.
    """

    def __init__(
        self,
        value_schema: pa.Schema,
        aggregators: Sequence[FieldAggregator],
        remove_record_on_delete: bool,
    ) -> None:
        self.value_schema = value_schema
        self.aggregators = list(aggregators)
        self.remove_record_on_delete = remove_record_on_delete
        self.nullable = {f.name: f.nullable for f in value_schema}

    def merge(self, groups: KeyGroups) -> MergeOutput:
        """Fold every key's records position by position."""
        columns = {f.name: groups.column(f.name) for f in self.value_schema}
        # Values under their field names, flags under tuples (never a field name).
        state: dict[str | tuple[str, str], pa.Array | np.ndarray] = {
            _DELETE: np.zeros(groups.num_groups, dtype=bool)
        }
        for field in self.value_schema:
            state[field.name] = pa.nulls(groups.num_groups, field.type)
            state[("seen", field.name)] = np.zeros(groups.num_groups, dtype=bool)
        walk = GroupWalk(groups, state)
        for positions in walk:
            kinds = groups.kinds[positions]
            reset = (
                (kinds == DELETE) if self.remove_record_on_delete else np.zeros_like(kinds, bool)
            )
            retract = groups.retract[positions] & ~reset
            add = ~groups.retract[positions] & ~reset
            inputs = {name: column.take(pa.array(positions)) for name, column in columns.items()}
            check_not_null(inputs, reset, self.nullable)
            walk.state[_DELETE] = reset
            for aggregator in self.aggregators:
                name = aggregator.field.name
                acc, seen = walk.state[name], walk.state[("seen", name)]
                acc, seen = apply_where(add, aggregator.agg, acc, inputs[name], seen)
                acc, seen = apply_where(
                    retract, _retract_as_agg(aggregator), acc, inputs[name], seen
                )
                walk.state[name] = replace_where(acc, reset, inputs[name])
                walk.state[("seen", name)] = seen
        final = walk.result()
        kinds = np.where(final[_DELETE], DELETE, INSERT).astype(np.int8)
        sequence = groups.sequence_numbers[groups.ends - 1]
        values = {f.name: final[f.name] for f in self.value_schema}
        return MergeOutput(records=groups.records(values, kinds, sequence))

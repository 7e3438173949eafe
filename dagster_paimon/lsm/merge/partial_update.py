"""PartialUpdateMergeFunction: newer non-null fields overwrite, optionally per sequence group.

The fold follows PartialUpdateMergeFunction.java record by record (all keys at once): a retract
record first met initializes the row from its values; ignore-delete then skips retractions;
remove-record-on-delete resets the row on -D; sequence groups retract or update only the fields
they protect, and only when the record's group sequence is not older than the row's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.errors import MergeError
from dagster_paimon.io.kv import DELETE, INSERT
from dagster_paimon.lsm.merge.aggregate.aggregators import FieldAggregator
from dagster_paimon.lsm.merge.functions import (
    MergeFunction,
    MergeOutput,
    apply_where,
    check_not_null,
)
from dagster_paimon.lsm.merge.key_groups import (
    GroupWalk,
    KeyGroups,
    arrow_column,
    nulls_like,
    replace_where,
    scatter,
    valid_mask,
)

_DELETE_REJECTED = (
    "the partial-update merge engine cannot accept delete records by default; set "
    "'ignore-delete', or 'partial-update.remove-record-on-delete', or configure sequence groups "
    "(with 'partial-update.remove-record-on-sequence-group') to retract them"
)

# Walk state: values under their field names, flags under tuples (never a field name).
State = dict[str | tuple[str, str], pa.Array | np.ndarray]
_DELETE, _MEET_INSERT, _NOT_NULL_FILLED, _SEQUENCE = (
    ("flag", "delete"),
    ("flag", "meet_insert"),
    ("flag", "not_null_filled"),
    ("flag", "sequence"),
)


@dataclass(frozen=True)
class SequenceGroup:
    """`fields.<sequence_fields>.sequence-group = <protected>`: the fields a sequence orders."""

    sequence_fields: tuple[str, ...]
    protected_fields: tuple[str, ...]
    removes_record_on_delete: bool = False


def _not_older(inputs: Sequence[pa.Array], current: Sequence[pa.Array]) -> np.ndarray:
    """UserDefinedSeqComparator(ascending, nulls first).compare(input, row) >= 0 per key."""
    less = np.zeros(len(inputs[0]), dtype=bool)
    undecided = np.ones(len(inputs[0]), dtype=bool)
    for a, b in zip(inputs, current, strict=True):
        a_valid, b_valid = valid_mask(a), valid_mask(b)
        a_less = (~a_valid & b_valid) | np.asarray(pc.fill_null(pc.less(a, b), False))
        a_greater = (a_valid & ~b_valid) | np.asarray(pc.fill_null(pc.greater(a, b), False))
        less |= undecided & a_less
        undecided &= ~(a_less | a_greater)
    return ~less


def _seen_key(name: str) -> tuple[str, str]:
    """State entry of an aggregator's first_value flag."""
    return ("seen", name)


class PartialUpdateMergeFunction(MergeFunction):
    """PartialUpdateMergeFunction over all keys at once (see the module docstring)."""

    def __init__(
        self,
        value_schema: pa.Schema,
        *,
        ignore_delete: bool,
        remove_record_on_delete: bool,
        sequence_groups: Sequence[SequenceGroup],
        aggregators: Mapping[str, FieldAggregator],
    ) -> None:
        self.value_schema = value_schema
        self.ignore_delete = ignore_delete
        self.remove_record_on_delete = remove_record_on_delete
        self.sequence_groups = list(sequence_groups)
        self.aggregators = dict(aggregators)
        self.nullable = {f.name: f.nullable for f in value_schema}
        self.field_index = {name: i for i, name in enumerate(value_schema.names)}
        grouped = {
            f for g in self.sequence_groups for f in (*g.sequence_fields, *g.protected_fields)
        }
        self.ungrouped = [f.name for f in value_schema if f.name not in grouped]

    def merge(self, groups: KeyGroups) -> MergeOutput:
        """Fold every key's records position by position."""
        count = groups.num_groups
        columns = {f.name: groups.column(f.name) for f in self.value_schema}
        state: State = {f.name: pa.nulls(count, f.type) for f in self.value_schema}
        state.update({_seen_key(n): np.zeros(count, dtype=bool) for n in self.aggregators})
        for flag in (_MEET_INSERT, _NOT_NULL_FILLED, _DELETE):
            state[flag] = np.zeros(count, dtype=bool)
        state[_SEQUENCE] = np.zeros(count, dtype=np.int64)
        walk = GroupWalk(groups, state)
        for positions in walk:
            inputs = {name: column.take(pa.array(positions)) for name, column in columns.items()}
            self._add(
                walk.state,
                inputs,
                groups.kinds[positions],
                groups.retract[positions],
                groups.sequence_numbers[positions],
            )
        final = walk.result()
        kinds = np.where(final[_DELETE] | ~final[_MEET_INSERT], DELETE, INSERT).astype(np.int8)
        values = {f.name: final[f.name] for f in self.value_schema}
        return MergeOutput(records=groups.records(values, kinds, final[_SEQUENCE]))

    def _add(
        self,
        state: State,
        inputs: Mapping[str, pa.Array],
        kinds: np.ndarray,
        retract: np.ndarray,
        sequence: np.ndarray,
    ) -> None:
        """PartialUpdateMergeFunction.add for the current record of every key."""
        state[_DELETE] = np.zeros(len(kinds), dtype=bool)
        first_retract = retract & ~state[_NOT_NULL_FILLED]
        self._init_row(state, inputs, first_retract)
        state[_NOT_NULL_FILLED] = state[_NOT_NULL_FILLED] | first_retract
        if not self.ignore_delete and retract.any():
            state[_SEQUENCE] = np.where(retract, sequence, state[_SEQUENCE])
            if self.sequence_groups:
                self._on_selected(state, inputs, retract, self._retract_with_groups, kinds)
            elif self.remove_record_on_delete:
                deleted = kinds == DELETE
                self._init_row(state, inputs, deleted)
                state[_DELETE] = deleted
            else:
                raise MergeError(_DELETE_REJECTED)
        add = ~retract
        if not add.any():
            return
        state[_SEQUENCE] = np.where(add, sequence, state[_SEQUENCE])
        if self.sequence_groups:
            self._on_selected(state, inputs, add, self._update_with_groups, kinds)
        else:
            self._update_non_null(state, inputs, add)
        state[_MEET_INSERT] = state[_MEET_INSERT] | add
        state[_NOT_NULL_FILLED] = state[_NOT_NULL_FILLED] | add

    def _init_row(self, state: State, inputs: Mapping[str, pa.Array], mask: np.ndarray) -> None:
        """initRow: the row becomes the record's values (NOT NULL checked) where `mask` holds."""
        if not mask.any():
            return
        check_not_null(inputs, mask, self.nullable)
        for name, column in inputs.items():
            state[name] = replace_where(state[name], mask, column)

    def _update_non_null(
        self, state: State, inputs: Mapping[str, pa.Array], add: np.ndarray
    ) -> None:
        """updateNonNullFields: non-null inputs overwrite; a null in a NOT NULL field fails."""
        check_not_null(inputs, add, self.nullable)
        for name, column in inputs.items():
            state[name] = replace_where(state[name], add & valid_mask(column), column)

    def _on_selected(
        self,
        state: State,
        inputs: Mapping[str, pa.Array],
        mask: np.ndarray,
        handler: Callable[[State, Mapping[str, pa.Array], np.ndarray], None],
        kinds: np.ndarray,
    ) -> None:
        """Run a handler on the keys under `mask` only, then write their state back."""
        if mask.all():
            handler(state, inputs, kinds)
            return
        selected = pa.array(mask)
        sub_state: State = {
            k: (v[mask] if isinstance(v, np.ndarray) else v.filter(selected))
            for k, v in state.items()
        }
        handler(sub_state, {k: v.filter(selected) for k, v in inputs.items()}, kinds[mask])
        for key, value in sub_state.items():
            state[key] = scatter(state[key], mask, value)

    def _group_order(
        self, state: State, inputs: Mapping[str, pa.Array], group: SequenceGroup
    ) -> tuple[np.ndarray, np.ndarray]:
        """Which keys' records carry this group's sequence, and which are not older than the row."""
        present = np.zeros(len(inputs[group.sequence_fields[0]]), dtype=bool)
        for name in group.sequence_fields:
            present |= valid_mask(inputs[name])
        newer = _not_older(
            [inputs[n] for n in group.sequence_fields], [state[n] for n in group.sequence_fields]
        )
        return present & newer, present & ~newer

    def _update_with_groups(
        self, state: State, inputs: Mapping[str, pa.Array], kinds: np.ndarray
    ) -> None:
        """updateWithSequenceGroup for add records."""
        for group in self.sequence_groups:
            newer, older = self._group_order(state, inputs, group)
            for name in group.sequence_fields:
                state[name] = replace_where(state[name], newer, inputs[name])
            for name in group.protected_fields:
                aggregator = self.aggregators.get(name)
                if aggregator is None:
                    state[name] = replace_where(state[name], newer, inputs[name])
                    continue
                acc, seen = state[name], state[_seen_key(name)]
                acc, seen = apply_where(newer, aggregator.agg, acc, inputs[name], seen)
                acc, seen = apply_where(older, aggregator.agg_reversed, acc, inputs[name], seen)
                state[name], state[_seen_key(name)] = acc, seen
        everyone = np.ones(len(kinds), dtype=bool)
        for name in self.ungrouped:
            aggregator = self.aggregators.get(name)
            if aggregator is None:
                state[name] = replace_where(state[name], valid_mask(inputs[name]), inputs[name])
            else:
                seen = state[_seen_key(name)]
                state[name], state[_seen_key(name)] = apply_where(
                    everyone, aggregator.agg, state[name], inputs[name], seen
                )

    def _retract_with_groups(
        self, state: State, inputs: Mapping[str, pa.Array], kinds: np.ndarray
    ) -> None:
        """retractWithSequenceGroup: a -D newer than a remove-record group resets the row.

        Java walks the fields in schema order and returns at the reset, so aggregates of fields
        before the resetting group's first sequence field are still retracted (and may fail).
        """
        orders = [self._group_order(state, inputs, g) for g in self.sequence_groups]
        stop = np.full(len(kinds), len(self.field_index))
        for group, (newer, _) in zip(self.sequence_groups, orders, strict=True):
            if group.removes_record_on_delete:
                first = min(self.field_index[n] for n in group.sequence_fields)
                stop = np.where(newer & (kinds == DELETE), np.minimum(stop, first), stop)
        reset = stop < len(self.field_index)
        for group, (newer, older) in zip(self.sequence_groups, orders, strict=True):
            for name in group.sequence_fields:
                state[name] = replace_where(state[name], newer & ~reset, inputs[name])
            for name in group.protected_fields:
                aggregator = self.aggregators.get(name)
                if aggregator is None:
                    state[name] = nulls_like(state[name], newer & ~reset)
                    continue
                retracted = (newer | older) & (self.field_index[name] < stop)
                if retracted.any():
                    selected = pa.array(retracted)
                    state[name] = scatter(
                        state[name],
                        retracted,
                        aggregator.retract(
                            arrow_column(state[name]).filter(selected),
                            inputs[name].filter(selected),
                        ),
                    )
        self._init_row(state, inputs, reset)
        state[_DELETE] = reset

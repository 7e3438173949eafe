"""A deliberately simple row-at-a-time model of Paimon's merge read, ported from the Java classes.

Records are dicts in KV layout. Each merge function mirrors its Java class method by method
(reset/add/getResult), so the vectorized engine can be checked against it record for record.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from dagster_paimon.errors import MergeError
from dagster_paimon.lsm.merge.kway import MergeEngine, merge_sorted_runs

SEQ, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"
RETRACT_KINDS = (1, 3)
INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


class ModelError(Exception):
    """The Java merge function would throw."""


def _is_blank(value: str | None) -> bool:
    """StringUtils.isBlank with Java's Character.isWhitespace."""
    java_space = set("\t\n\x0b\f\r\x1c\x1d\x1e\x1f \u1680\u2028\u2029\u205f\u3000")
    java_space |= {chr(c) for c in range(0x2000, 0x200B) if c != 0x2007}
    return value is None or all(ch in java_space for ch in value)


def _split(value: str, delimiter: str) -> list[str]:
    """splitByWholeSeparatorPreserveAllTokens, close enough: trailing empty tokens are blank."""
    return value.split(delimiter or " ")


class Agg:
    """FieldAggregator: agg, aggReversed = agg(in, acc), retract throws by default."""

    retractable = False

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def reset(self) -> None:
        """Per-key state (first_value's initialized flag)."""

    def agg(self, acc: Any, x: Any) -> Any:
        raise NotImplementedError

    def agg_reversed(self, acc: Any, x: Any) -> Any:
        return self.agg(x, acc)

    def retract(self, acc: Any, x: Any) -> Any:
        raise ModelError("retract not supported")


def _check_int(kind: str, value: int) -> int:
    bits = INT_BITS.get(kind)
    if bits is not None and not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ModelError(f"{kind} overflow")
    return value


class Sum(Agg):
    retractable = True

    def agg(self, acc, x):
        if acc is None or x is None:
            return x if acc is None else acc
        if self.kind == "float32":
            return float(np.float32(acc) + np.float32(x))
        return _check_int(self.kind, acc + x)

    def retract(self, acc, x):
        if acc is None or x is None:
            if acc is not None:
                return acc
            return None if x is None else _check_int(self.kind, -x)
        if self.kind == "float32":
            return float(np.float32(acc) - np.float32(x))
        return _check_int(self.kind, acc - x)


class Product(Agg):
    retractable = True

    def agg(self, acc, x):
        if acc is None or x is None:
            return x if acc is None else acc
        return _check_int(self.kind, acc * x)

    def retract(self, acc, x):
        if acc is None or x is None:
            return acc
        if x == 0:
            raise ModelError("division by zero")
        quotient = abs(acc) // abs(x)
        return _check_int(self.kind, quotient if (acc < 0) == (x < 0) else -quotient)


class Max(Agg):
    def agg(self, acc, x):
        if acc is None or x is None:
            return x if acc is None else acc
        return x if acc < x else acc


class Min(Agg):
    def agg(self, acc, x):
        if acc is None or x is None:
            return x if acc is None else acc
        return acc if acc < x else x


class LastValue(Agg):
    retractable = True

    def agg(self, acc, x):
        return x

    def retract(self, acc, x):
        return None


class LastNonNull(Agg):
    retractable = True

    def agg(self, acc, x):
        return acc if x is None else x

    def retract(self, acc, x):
        return None if x is not None else acc


class FirstValue(Agg):
    def reset(self):
        self.initialized = False

    def agg(self, acc, x):
        if not self.initialized:
            self.initialized = True
            return x
        return acc


class FirstNonNull(Agg):
    def reset(self):
        self.initialized = False

    def agg(self, acc, x):
        if not self.initialized and x is not None:
            self.initialized = True
            return x
        return acc


class PrimaryKey(Agg):
    retractable = True

    def agg(self, acc, x):
        return x

    def retract(self, acc, x):
        return x


class BoolAnd(Agg):
    def agg(self, acc, x):
        if acc is None or x is None:
            return x if acc is None else acc
        return acc and x


class BoolOr(Agg):
    def agg(self, acc, x):
        if acc is None or x is None:
            return x if acc is None else acc
        return acc or x


class ListAgg(Agg):
    def __init__(self, kind: str, delimiter: str = ",", distinct: bool = False) -> None:
        super().__init__(kind)
        self.delimiter, self.distinct = delimiter, distinct

    def agg(self, acc, x):
        if _is_blank(x):
            return acc
        if _is_blank(acc):
            return x
        if not self.distinct:
            return acc + self.delimiter + x
        seen = set(_split(acc, self.delimiter))
        result = acc
        for token in _split(x, self.delimiter):
            if _is_blank(token) or token in seen:
                continue
            seen.add(token)
            result += self.delimiter + token
        return result


class Collect(Agg):
    retractable = True

    def __init__(self, kind: str, distinct: bool = False) -> None:
        super().__init__(kind)
        self.distinct = distinct

    def agg(self, acc, x):
        if acc is None and x is None:
            return None
        if (acc is None or x is None) and not self.distinct:
            return x if acc is None else acc
        out: list = []
        for element in [*(acc or []), *(x or [])]:
            if not self.distinct or element not in out:
                out.append(element)
        return out

    def agg_reversed(self, acc, x):
        return self.agg(acc, x)

    def retract(self, acc, x):
        if acc is None:
            return None
        if not x:
            return acc
        remaining = list(x)
        out = []
        for element in acc:
            if element in remaining:
                remaining.remove(element)
            else:
                out.append(element)
        return out


class MergeMap(Agg):
    retractable = True

    def agg(self, acc, x):
        if acc is None or x is None:
            return x if acc is None else acc
        merged = dict(acc)
        merged.update(dict(x))
        return list(merged.items())

    def retract(self, acc, x):
        if acc is None:
            return None
        if not x:
            return acc
        gone = {k for k, _ in x}
        return [(k, v) for k, v in acc if k not in gone]


class IgnoreRetract(Agg):
    retractable = True

    def __init__(self, inner: Agg) -> None:
        super().__init__(inner.kind)
        self.inner = inner

    def reset(self):
        self.inner.reset()

    def agg(self, acc, x):
        return self.inner.agg(acc, x)

    def retract(self, acc, x):
        return acc


@dataclass
class Table:
    """What a model merge function knows of the table."""

    fields: list[str]
    nullable: dict[str, bool]
    key_columns: list[str]
    sequence_fields: list[str] = field(default_factory=list)
    ascending: bool = True


def _kv(template: dict, seq: int, kind: int, row: dict) -> dict:
    out = {k: v for k, v in template.items() if k.startswith("_KEY_")}
    out[SEQ], out[KIND] = seq, kind
    out.update(row)
    return out


class Deduplicate:
    def __init__(self, ignore_delete: bool) -> None:
        self.ignore_delete = ignore_delete

    def reset(self):
        self.latest = None

    def add(self, kv):
        if self.ignore_delete and kv[KIND] in RETRACT_KINDS:
            return
        self.latest = kv

    def result(self):
        return self.latest


class FirstRow:
    def __init__(self, ignore_delete: bool) -> None:
        self.ignore_delete = ignore_delete

    def reset(self):
        self.first = None

    def add(self, kv):
        if kv[KIND] in RETRACT_KINDS:
            if self.ignore_delete:
                return
            raise ModelError("first-row retract")
        if self.first is None:
            self.first = kv

    def result(self):
        return self.first


class Aggregate:
    def __init__(self, table: Table, aggs: dict[str, Agg], remove_record_on_delete: bool):
        self.table, self.aggs, self.remove = table, aggs, remove_record_on_delete

    def reset(self):
        self.latest = None
        self.row = {f: None for f in self.table.fields}
        self.delete = False
        for agg in self.aggs.values():
            agg.reset()

    def add(self, kv):
        self.latest = kv
        self.delete = self.remove and kv[KIND] == 3
        if self.delete:
            self.row = _init_row(self.table, kv)
            return
        for name in self.table.fields:
            agg = self.aggs[name]
            if kv[KIND] in RETRACT_KINDS:
                self.row[name] = agg.retract(self.row[name], kv[name])
            else:
                self.row[name] = agg.agg(self.row[name], kv[name])

    def result(self):
        return _kv(self.latest, self.latest[SEQ], 3 if self.delete else 0, self.row)


def _init_row(table: Table, kv: dict) -> dict:
    row = {}
    for name in table.fields:
        if kv[name] is None and not table.nullable[name]:
            raise ModelError(f"{name} can not be null")
        row[name] = kv[name]
    return row


def _compare(a: list, b: list) -> int:
    """Ascending, nulls first, field by field."""
    for x, y in zip(a, b, strict=True):
        if x is None and y is None:
            continue
        if x is None:
            return -1
        if y is None:
            return 1
        if x != y:
            return -1 if x < y else 1
    return 0


class PartialUpdate:
    """PartialUpdateMergeFunction, field loop by field loop."""

    def __init__(
        self,
        table: Table,
        ignore_delete: bool,
        remove_record_on_delete: bool,
        groups: list[tuple[list[str], list[str]]],
        aggs: dict[str, Agg],
        partial_delete_fields: set[str],
    ) -> None:
        self.table, self.ignore_delete, self.remove = table, ignore_delete, remove_record_on_delete
        self.aggs, self.partial_delete = aggs, partial_delete_fields
        self.comparator: dict[str, list[str]] = {}
        for sequence, protected in groups:
            for name in (*protected, *sequence):
                self.comparator[name] = sequence

    def reset(self):
        self.key = None
        self.meet_insert = False
        self.not_null_filled = False
        self.row = {f: None for f in self.table.fields}
        self.latest_seq = 0
        self.delete = False
        for agg in self.aggs.values():
            agg.reset()

    def add(self, kv):
        self.key = kv
        self.delete = False
        if kv[KIND] in RETRACT_KINDS:
            if not self.not_null_filled:
                self.row = _init_row(self.table, kv)
                self.not_null_filled = True
            if self.ignore_delete:
                return
            self.latest_seq = kv[SEQ]
            if self.comparator:
                self._retract_with_groups(kv)
                return
            if self.remove:
                if kv[KIND] == 3:
                    self.delete = True
                    self.row = _init_row(self.table, kv)
                return
            raise ModelError("partial-update retract")
        self.latest_seq = kv[SEQ]
        if not self.comparator:
            for name in self.table.fields:
                if kv[name] is not None:
                    self.row[name] = kv[name]
                elif not self.table.nullable[name]:
                    raise ModelError(f"{name} can not be null")
        else:
            self._update_with_groups(kv)
        self.meet_insert = True
        self.not_null_filled = True

    def _empty(self, kv, sequence, processed):
        if any(kv[f] is not None for f in sequence):
            return False
        processed.update(sequence)
        return True

    def _update_with_groups(self, kv):
        processed: set[str] = set()
        for name in self.table.fields:
            sequence, agg = self.comparator.get(name), self.aggs.get(name)
            acc = self.row[name]
            if sequence is None:
                if agg is not None:
                    self.row[name] = agg.agg(acc, kv[name])
                elif kv[name] is not None:
                    self.row[name] = kv[name]
                continue
            if name in processed or self._empty(kv, sequence, processed):
                continue
            current = [self.row[f] for f in sequence]
            if _compare([kv[f] for f in sequence], current) >= 0:
                if name in sequence:
                    for f in sequence:
                        self.row[f] = kv[f]
                        processed.add(f)
                    continue
                self.row[name] = kv[name] if agg is None else agg.agg(acc, kv[name])
            elif agg is not None:
                self.row[name] = agg.agg_reversed(acc, kv[name])

    def _retract_with_groups(self, kv):
        processed: set[str] = set()
        updated: set[str] = set()
        for name in self.table.fields:
            sequence, agg = self.comparator.get(name), self.aggs.get(name)
            if sequence is None or name in processed or self._empty(kv, sequence, processed):
                continue
            if _compare([kv[f] for f in sequence], [self.row[f] for f in sequence]) >= 0:
                if name in sequence:
                    for f in sequence:
                        if f not in updated:
                            if kv[KIND] == 3 and f in self.partial_delete:
                                self.delete = True
                                self.row = _init_row(self.table, kv)
                                return
                            self.row[f] = kv[f]
                            updated.add(f)
                        processed.add(f)
                elif agg is None:
                    self.row[name] = None
                else:
                    self.row[name] = agg.retract(self.row[name], kv[name])
            elif agg is not None:
                self.row[name] = agg.retract(self.row[name], kv[name])

    def result(self):
        kind = 3 if self.delete or not self.meet_insert else 0
        return _kv(self.key, self.latest_seq, kind, self.row)


class _Reversed:
    """Sort wrapper for descending order."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Reversed) -> bool:
        return other.value < self.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and self.value == other.value


def _order(table: Table, run: int, position: int, kv: dict) -> tuple:
    user = []
    for name in table.sequence_fields:
        value = kv[name]
        if value is None:
            user.append((0, 0))
        else:
            user.append((1, value if table.ascending else _Reversed(value)))
    is_add = kv[KIND] not in RETRACT_KINDS
    return (tuple(kv[k] for k in table.key_columns), *user, kv[SEQ], is_add, run, position)


def model_merge(
    runs: Iterable[list[dict]], table: Table, merge_function: Any, drop_delete: bool
) -> list[dict]:
    """Sort every record into merge order, reduce each key's records, drop what Java drops."""
    records = [
        (_order(table, r, p, kv), kv) for r, run in enumerate(runs) for p, kv in enumerate(run)
    ]
    records.sort(key=lambda record: record[0])
    out = []
    i = 0
    while i < len(records):
        j = i
        key = records[i][0][0]
        while j < len(records) and records[j][0][0] == key:
            j += 1
        group = [kv for _, kv in records[i:j]]
        if len(group) == 1:
            result = group[0]
        else:
            merge_function.reset()
            for kv in group:
                merge_function.add(kv)
            result = merge_function.result()
        if result is not None and not (drop_delete and result[KIND] in RETRACT_KINDS):
            out.append(result)
        i = j
    return out


def kv_schema_of(values: pa.Schema, key_fields: list[str]) -> pa.Schema:
    """KV layout for a value schema: _KEY_ columns, sequence number, kind, then the values."""
    keys = [pa.field("_KEY_" + k, values.field(k).type, nullable=False) for k in key_fields]
    system = [pa.field(SEQ, pa.int64(), nullable=False), pa.field(KIND, pa.int8(), nullable=False)]
    return pa.schema([*keys, *system, *values])


def run_merge(
    runs: list[list[dict]],
    values: pa.Schema,
    primary_keys: list[str],
    options: dict[str, str],
    *,
    partition_keys: tuple[str, ...] = (),
    drop_delete: bool = False,
    batch_rows: list[int] | None = None,
    max_batch_rows: int = 1024,
) -> list[dict]:
    """Merge runs of KV dicts with the vectorized engine; batches of `batch_rows[i]` per run."""
    engine = MergeEngine.from_options(values, primary_keys, list(partition_keys), options)
    schema = kv_schema_of(values, [k for k in primary_keys if k not in partition_keys])
    arrow_runs = []
    for i, run in enumerate(runs):
        size = batch_rows[i] if batch_rows else max(len(run), 1)
        arrow_runs.append(pa.Table.from_pylist(run, schema=schema).to_batches(max_chunksize=size))
    batches = merge_sorted_runs(
        arrow_runs,
        engine,
        drop_delete=drop_delete,
        key_columns=list(engine.key_columns),
        max_batch_rows=max_batch_rows,
    )
    out = []
    for batch in batches:
        assert batch.num_rows <= max_batch_rows
        assert batch.schema.equals(schema)
        out.extend(batch.to_pylist())
    return out


def model_table(
    values: pa.Schema, primary_keys: list[str], options: dict[str, str], partition_keys=()
) -> Table:
    """The model's view of a table, with the sequence order the engine parsed."""
    engine = MergeEngine.from_options(values, primary_keys, list(partition_keys), options)
    return Table(
        fields=values.names,
        nullable={f.name: f.nullable for f in values},
        key_columns=list(engine.key_columns),
        sequence_fields=list(engine.sequence_fields),
        ascending=engine.sequence_ascending,
    )


ERROR = "error"


def merge_or_error(call) -> Any:
    """The merge's rows, or ERROR when it raises the engine's or the model's merge error."""
    try:
        return call()
    except (MergeError, ModelError):
        return ERROR

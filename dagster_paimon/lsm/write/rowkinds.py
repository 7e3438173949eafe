"""Row kinds of ingested rows: parsed from `_row_kind` or `rowkind.field`, filtered as Java does."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.errors import SchemaMismatchError
from dagster_paimon.io.kv import DELETE, UPDATE_BEFORE
from dagster_paimon.options import IGNORE_UPDATE_BEFORE, flag, ignore_delete

KIND_NAMES = ("+I", "-U", "+U", "-D")
_SHOWN = 5


def parse_row_kinds(batch: pa.RecordBatch, column: str | None) -> np.ndarray:
    """Kind bytes (+I=0, -U=1, +U=2, -D=3) of every row; absent column means all +I."""
    if column is None:
        return np.zeros(batch.num_rows, dtype=np.int8)
    values = batch.column(column)
    codes = pc.index_in(values, value_set=pa.array(KIND_NAMES, values.type))
    if codes.null_count:
        unknown = pc.unique(pc.filter(values, pc.is_null(codes))).to_pylist()
        raise SchemaMismatchError(
            f"column {column!r} holds unknown row kinds {unknown[:_SHOWN]}"
            f"{' and more' if len(unknown) > _SHOWN else ''}; expected one of {list(KIND_NAMES)}"
        )
    return np.asarray(codes).astype(np.int8)


class RowKindFilter:
    """Java's RowKindFilter: `ignore-delete` drops -U and -D, `ignore-update-before` drops -U."""

    def __init__(self, options: Mapping[str, str]):
        self.ignore_retracts = ignore_delete(options)
        self.ignore_update_before = flag(options, IGNORE_UPDATE_BEFORE)

    @property
    def active(self) -> bool:
        """Whether any row kind is dropped at all."""
        return self.ignore_retracts or self.ignore_update_before

    def keep(self, kinds: np.ndarray) -> np.ndarray:
        """Mask of the rows to write."""
        dropped = np.zeros(len(kinds), dtype=bool)
        if self.active:
            dropped |= kinds == UPDATE_BEFORE
        if self.ignore_retracts:
            dropped |= kinds == DELETE
        return ~dropped

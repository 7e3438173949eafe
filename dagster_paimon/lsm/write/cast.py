"""Input columns in the table's types, as Paimon's writers convert them.

Kept apart from the layout checks so Spark's Python workers that only hash keys import no more
than pyarrow.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


def cast_column(column: pa.Array, target: pa.DataType) -> pa.Array:
    """A column in the table's type; finer time units are truncated as Paimon's writers do."""
    if column.type.equals(target):
        return column
    return pc.cast(column, options=pc.CastOptions(target, allow_time_truncate=True))

"""Test data: DataFileMeta values built from a few ints, for level, strategy and plan tests."""

from __future__ import annotations

from pypaimon.data.timestamp import Timestamp
from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.manifest.schema.simple_stats import SimpleStats
from pypaimon.schema.data_types import AtomicType, DataField
from pypaimon.table.row.generic_row import GenericRow

KEY_FIELD = DataField(1073741823, "_KEY_k", AtomicType("INT"))
DT_FIELD = DataField(0, "dt", AtomicType("STRING"))


def key(value: int) -> GenericRow:
    """A single-INT primary key row, the shape every test table uses."""
    return GenericRow([value], [KEY_FIELD])


def data_file(
    name: str,
    level: int = 0,
    size: int = 1,
    min_key: int = 0,
    max_key: int = 0,
    min_seq: int = 0,
    max_seq: int = 0,
    creation_ms: int = 0,
    delete_rows: int = 0,
) -> DataFileMeta:
    """A data file's metadata with only the fields compaction looks at set meaningfully."""
    return DataFileMeta(
        file_name=name,
        file_size=size,
        row_count=max(1, max_key - min_key + 1),
        min_key=key(min_key),
        max_key=key(max_key),
        key_stats=SimpleStats.empty_stats(),
        value_stats=SimpleStats.empty_stats(),
        min_sequence_number=min_seq,
        max_sequence_number=max_seq,
        schema_id=0,
        level=level,
        extra_files=[],
        creation_time=Timestamp.from_epoch_millis(creation_ms),
        delete_row_count=delete_rows,
        file_source=0,
    )

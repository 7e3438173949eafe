"""The Partition value: path spelling, rows, equality by values, and K=V parsing."""

from __future__ import annotations

import pytest
from pypaimon.schema.data_types import AtomicType, DataField
from pypaimon.table.row.generic_row import GenericRowSerializer

from dagster_paimon.errors import InvalidArgumentError
from dagster_paimon.partition import DEFAULT_PARTITION_NAME, Partition, parse_partition_spec

FIELDS = (DataField(0, "dt", AtomicType("STRING")), DataField(1, "hr", AtomicType("INT")))


def test_spec_label_and_matching_spell_values_as_paths_do():
    p = Partition(("2024-01-01", None), FIELDS)
    assert p.spec == {"dt": "2024-01-01", "hr": DEFAULT_PARTITION_NAME}
    assert p.label() == f"dt=2024-01-01,hr={DEFAULT_PARTITION_NAME}"
    assert p.matches({"dt": "2024-01-01"}) and not p.matches({"dt": "2024-01-02"})
    assert Partition((), ()).label() == "-"


def test_rows_and_bytes_round_trip():
    p = Partition(("2024-01-01", 7), FIELDS)
    assert Partition.of_row(p.row()) == p
    assert Partition.of_bytes(GenericRowSerializer.to_bytes(p.row()), FIELDS) == p
    assert {p: 1}[Partition(("2024-01-01", 7))] == 1


def test_parse_partition_spec():
    assert parse_partition_spec(None) is None
    assert parse_partition_spec(" dt = 2024-01-01 ,hr=3") == {"dt": "2024-01-01", "hr": "3"}
    for bad in ("dt", "=x", "dt=1,dt=2"):
        with pytest.raises(InvalidArgumentError, match="partition must look like K=V"):
            parse_partition_spec(bad)

"""Column-at-once zigzag varints equal the scalar encoding, value by value."""

from __future__ import annotations

import numpy as np
import pytest

from dagster_paimon.io.varint import unzigzag, varint, zigzag, zigzag_varints

EDGES = [0, 1, -1, 63, -64, 64, 2**31 - 1, -(2**31), 2**62, 2**63 - 1, -(2**63)]


@pytest.mark.parametrize("scale", [1, 2**10, 2**40])
def test_a_column_encodes_as_its_values_do(scale):
    rng = np.random.default_rng(scale)
    values = np.concatenate([rng.integers(-scale, scale, 500), np.array(EDGES, np.int64)])
    data, ends = zigzag_varints(values)
    expected = [varint(zigzag(int(v))) for v in values]
    assert data.tobytes() == b"".join(expected)
    assert ends.tolist() == np.cumsum([len(e) for e in expected]).tolist()


def test_equal_widths_and_empty_columns():
    data, ends = zigzag_varints(np.array([1, 2, 3], np.int64))
    assert data.tobytes() == bytes([2, 4, 6]) and ends.tolist() == [1, 2, 3]
    data, ends = zigzag_varints(np.array([], np.int64))
    assert len(data) == 0 and len(ends) == 0


@pytest.mark.parametrize("value", EDGES)
def test_zigzag_round_trips(value):
    assert unzigzag(zigzag(value)) == value
    assert zigzag(value) >= 0

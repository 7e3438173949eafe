"""Reading helpers: batches regrouped for writing."""

import pyarrow as pa

from dagster_paimon.io.read import coalesced


def test_coalesced_keeps_every_row_in_order_in_batches_of_at_least_the_size():
    batches = [pa.record_batch({"x": list(range(s, s + n))}) for s, n in ((0, 3), (3, 4), (7, 5))]
    out = list(coalesced(batches, 6))
    assert [b.num_rows for b in out] == [7, 5]
    assert [v for b in out for v in b.column(0).to_pylist()] == list(range(12))
    assert list(coalesced([], 6)) == []

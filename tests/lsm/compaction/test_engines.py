"""Every merge engine end to end: pypaimon reads the same rows before, after minor and after
full compaction, and they equal an independent model of the table.

Row kinds and options per engine are those pypaimon's writer and reader accept (its
aggregation and partial-update engines reject retractions and delete options); those
semantics are covered against the row-at-a-time model in test_merge.py.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pyarrow as pa
import pytest

from dagster_paimon.kinds import compact_open_table, health_of
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.table import TableRef, TableSpec, create_table
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import read_rows, sorted_rows

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("amount", pa.int64()),
        pa.field("score", pa.float64()),
        pa.field("op", pa.string()),
    ]
)
VALUES = ("name", "amount", "score")
Model = Callable[[dict, dict], None]


def first_row(model: dict, row: dict) -> None:
    """The first insert of a key wins for ever."""
    model.setdefault(row["id"], row)


def partial_update(model: dict, row: dict) -> None:
    """Each non-null field overwrites the key's row."""
    current = model.setdefault(row["id"], {"id": row["id"], **dict.fromkeys(VALUES), "op": None})
    for column in (*VALUES, "op"):
        if row[column] is not None:
            current[column] = row[column]


def aggregation(model: dict, row: dict) -> None:
    """amount and score sum (retractions subtract); name and op keep the last non-null value,
    which a non-null retraction clears (FieldLastNonNullValueAgg.retract)."""
    sign = -1 if row["op"] in ("-U", "-D") else 1
    current = model.setdefault(
        row["id"], {"id": row["id"], "name": None, "amount": None, "score": None, "op": None}
    )
    for column in ("amount", "score"):
        if row[column] is not None:
            base = current[column] if current[column] is not None else 0
            current[column] = base + sign * row[column]
    for column in ("name", "op"):
        if row[column] is not None:
            current[column] = row[column] if sign > 0 else None


ENGINES = {
    "first-row": ({"merge-engine": "first-row"}, first_row, ("+I",)),
    "partial-update": ({"merge-engine": "partial-update"}, partial_update, ("+I", "+U")),
    "aggregation": (
        {
            "merge-engine": "aggregation",
            "fields.amount.aggregate-function": "sum",
            "fields.score.aggregate-function": "sum",
        },
        aggregation,
        ("+I", "+U"),
    ),
}


def random_rows(rng: random.Random, commit: int, kinds: tuple[str, ...]) -> list[dict]:
    """One commit: each key at most once, values often null so engines must combine."""
    rows = []
    for key in rng.sample(range(60), 25):
        op = rng.choice(kinds)
        rows.append(
            {
                "id": key,
                "name": rng.choice([None, f"n{commit}-{key}"]),
                "amount": rng.choice([None, rng.randrange(-50, 50)]),
                "score": rng.choice([None, float(rng.randrange(100))]),
                "op": op,
            }
        )
    return rows


def write(table, model: dict, apply: Model, rng, commits: range, kinds) -> None:
    for commit in commits:
        rows = random_rows(rng, commit, kinds)
        write_with_pypaimon(table, pa.Table.from_pylist(rows, schema=SCHEMA))
        for row in rows:
            apply(model, dict(row))


def expected(model: dict) -> list[dict]:
    return sorted_rows(model.values(), ("id",))


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_engine_reads_the_same_before_and_after_minor_and_full_compaction(warehouse, engine):
    options, apply, kinds = ENGINES[engine]
    spec = TableSpec(
        "db",
        "engine",
        SCHEMA,
        ("id",),
        2,
        (),
        {"rowkind.field": "op", "num-sorted-run.compaction-trigger": "3", **options},
    )
    table = create_table(warehouse, spec)
    ref = TableRef(warehouse, "db.engine")
    rng = random.Random(engine)
    model: dict = {}

    write(table, model, apply, rng, range(5), kinds)
    # Lookup tables (first-row) hide level 0 from batch reads until compaction lifts it.
    visible_before = [] if engine == "first-row" else expected(model)
    assert sorted_rows(read_rows(table), ("id",)) == visible_before

    minor = compact_open_table(table, ref)
    assert minor.snapshot_id is not None
    health = health_of(read_levels(table)).aggregate()
    assert health["max_sorted_runs"] <= 3
    if engine == "first-row":
        assert health["level0_files"] == 0
    assert sorted_rows(read_rows(table), ("id",)) == expected(model)

    write(table, model, apply, rng, range(5, 8), kinds)
    full = compact_open_table(table, ref, full=True)
    assert full.snapshot_id is not None
    for bucket in read_levels(table).buckets:
        assert bucket.levels.number_of_sorted_runs() == 1
    assert sorted_rows(read_rows(table), ("id",)) == expected(model)

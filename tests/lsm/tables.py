"""Real tables for compaction tests: pypaimon writes them, a plain dict models their contents."""

from __future__ import annotations

import random

import pyarrow as pa

from dagster_paimon.kinds import compact_open_table
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.table import TableRef, TableSpec, create_table, open_table
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import apply_dedup

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("amount", pa.float64()),
        pa.field("op", pa.string()),
    ]
)
KEY = ("dt", "id")
DAYS = ("2024-01-01", "2024-01-02")


def cdc_table(
    warehouse: str, bucket: int = 2, catalog_options: dict[str, str] | None = None, **options: str
):
    """A deduplicate table whose `op` column carries each row's kind (+I, -U, +U, -D)."""
    spec = TableSpec("db", "cdc", SCHEMA, KEY, bucket, ("dt",), {"rowkind.field": "op", **options})
    return create_table(warehouse, spec, catalog_options)


def cdc_batch(rng: random.Random, commit: int, rows: int = 60, keys: int = 80) -> list[dict]:
    """Upserts and deletes over a small key space, so commits overlap heavily."""
    batch = []
    seen = set()
    for _ in range(rows):
        dt, key = rng.choice(DAYS), rng.randrange(keys)
        if (dt, key) in seen:
            continue
        seen.add((dt, key))
        op = rng.choices(["+I", "+U", "-D"], weights=[6, 3, 1])[0]
        batch.append(
            {"dt": dt, "id": key, "name": f"n{commit}-{key}", "amount": commit * 1.5, "op": op}
        )
    return batch


def write_history(table, commits: int, seed: int = 7, model: dict | None = None) -> dict:
    """Write `commits` pypaimon commits and return the expected live rows per key."""
    rng = random.Random(seed)
    model = {} if model is None else model
    for commit in range(commits):
        rows = cdc_batch(rng, commit)
        write_with_pypaimon(table, pa.Table.from_pylist(rows, schema=SCHEMA))
        apply_dedup(model, [{**r, "_kind": r["op"]} for r in rows], KEY)
    return model


def compact(table, warehouse: str, catalog_options: dict[str, str] | None = None, **kwargs):
    """Compact through the public entry point, as the CLI and Dagster do."""
    ref = TableRef(warehouse, "db.cdc", tuple(sorted((catalog_options or {}).items())))
    return compact_open_table(table, ref, **kwargs)


def compact_db_t(warehouse: str, **kwargs):
    """Our compaction of db.t, as the CLI runs it."""
    return PaimonTable.open(warehouse, "db.t").compact(**kwargs)


def live_extensions(warehouse: str) -> set[str]:
    """Extensions of db.t's live data files."""
    return {
        f.file_name.rsplit(".", 1)[-1]
        for b in read_levels(open_table(warehouse, "db.t")).buckets
        for f in b.levels.all_files()
    }

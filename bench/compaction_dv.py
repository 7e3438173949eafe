"""Deletion-vector compaction of TPC-H lineitem upserts, each beside its reference, same run.

Run: PATH=$PWD/.venv/bin:$PATH uv run python bench/compaction_dv.py [--scale 1] [--upsert 0.1]

Builds two tables from the same rows: a base fully compacted to the top level, then upserts of
a random fraction of the keys in level 0. One table has deletion vectors, the other only
`compaction.force-up-level-0`, so both lift the same level-0 bytes to the level below the top:
  (a) minor compaction of the DV table: merge + lookup of every key in the top level + vectors
  (b) the same minor compaction without lookup (the plain table): target (a) <= 2 x (b)
  (c) full compaction of the DV table afterwards (vectors applied, every level rewritten)
  (d) the pyarrow floor for (c): its input files read and written without merge:
      target (c) <= 1.5 x (d)
and the peak RSS of (a) and (c), each in its own process.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.compaction import IDENT, MB, compact_in_child, floor, input_files, lineitem
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.table import TableSpec, create_table, open_table

KEYS = ("l_orderkey", "l_linenumber")


def build(warehouse: str, data: pa.Table, upserts: pa.Table, options: dict[str, str]) -> None:
    """The base compacted to the top level, then the upserts in level 0."""
    from dagster_paimon.paimon_table import PaimonTable

    spec = TableSpec("bench", "lineitem", data.schema, KEYS, 1, (), options)
    create_table(warehouse, spec)
    t0 = time.perf_counter()
    ingest_arrow(open_table(warehouse, IDENT), data)
    PaimonTable.open(warehouse, IDENT).compact(full=True)
    third = upserts.num_rows // 3 + 1
    for start in range(0, upserts.num_rows, third):
        ingest_arrow(open_table(warehouse, IDENT), upserts.slice(start, third))
    print(f"  built {options or 'plain'} in {time.perf_counter() - t0:.1f} s")


def upserts_of(data: pa.Table, fraction: float, seed: int = 7) -> pa.Table:
    """A random fraction of the rows, spread over the whole key range, with new quantities
    (three commits of a third each, so the minor compactions merge three level-0 runs)."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(data.num_rows, int(data.num_rows * fraction), replace=False)
    picked = data.take(pa.array(rows))
    field = picked.schema.field("l_quantity")
    quantity = pc.add(picked.column("l_quantity"), pa.scalar(1, field.type)).cast(field.type)
    return picked.set_column(picked.schema.get_field_index("l_quantity"), field, quantity)


def level_summary(warehouse: str) -> str:
    """Files per level and deleted rows, for the printout."""
    health = read_levels(open_table(warehouse, IDENT)).health()
    bucket = health.buckets[0]
    return f"levels {bucket.levels}, {bucket.deleted_rows} rows deleted by vectors"


def main() -> None:
    """Build both tables once, then measure (a)-(d) on them."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1)
    parser.add_argument("--upsert", type=float, default=0.1, help="fraction of keys upserted")
    parser.add_argument("--keep", help="reuse/keep the warehouses (and TPC-H data) here")
    args = parser.parse_args()
    root = Path(args.keep or tempfile.mkdtemp(prefix="bench-dv-"))
    dv, plain = str(root / "dv"), str(root / "plain")
    try:
        source = lineitem(args.scale, root)
        if not (root / "built").exists():
            raw = pq.ParquetFile(source).read()
            schema = pa.schema([pa.field(f.name, f.type, f.nullable) for f in raw.schema])
            data = raw.cast(schema)
            upserts = upserts_of(data, args.upsert)
            print(f"building: {data.num_rows} base rows, {upserts.num_rows} upserts")
            build(dv, data, upserts, {"deletion-vectors.enabled": "true"})
            build(plain, data, upserts, {"compaction.force-up-level-0": "true"})
            (root / "built").mkdir()
            for w in (dv, plain):
                shutil.copytree(w, f"{w}-pristine")
        else:
            for w in (dv, plain):
                shutil.rmtree(w, ignore_errors=True)
                shutil.copytree(f"{w}-pristine", w)
        levels = read_levels(open_table(dv, IDENT))
        level0 = sum(f.file_size for b in levels.buckets for f in b.levels.level0)
        print(f"level 0: {level0 / MB:.1f} MB; {level_summary(dv)}")
        minor_dv = compact_in_child(dv, full=False)
        minor_plain = compact_in_child(plain, full=False)
        print(f"after (a): {level_summary(dv)}")
        print(
            f"(a) DV minor compaction with lookup: {minor_dv['seconds']:.2f} s, "
            f"peak RSS {minor_dv['rss_mb']:.0f} MB"
        )
        print(
            f"(b) the same bytes without lookup: {minor_plain['seconds']:.2f} s, "
            f"peak RSS {minor_plain['rss_mb']:.0f} MB "
            f"-> (a)/(b) = {minor_dv['seconds'] / minor_plain['seconds']:.2f} (target <= 2)"
        )
        files = input_files(dv)
        total = sum(size for _, size in files)
        scratch = root / "scratch"
        scratch.mkdir(exist_ok=True)
        floor_s = floor(files, str(scratch / "floor.parquet"))
        full = compact_in_child(dv, full=True)
        print(
            f"(c) DV full compaction of {len(files)} files, {total / MB:.1f} MB: "
            f"{full['seconds']:.2f} s, peak RSS {full['rss_mb']:.0f} MB; {level_summary(dv)}"
        )
        print(
            f"(d) floor, read+write without merge: {floor_s:.2f} s "
            f"-> (c)/(d) = {full['seconds'] / floor_s:.2f} (target <= 1.5)"
        )
        shutil.rmtree(scratch, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

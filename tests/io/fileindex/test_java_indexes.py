"""Our data-file indexes say what Paimon's Java writers (0.9, 1.0) build, and Java reads them so.

Java's writers of these releases index append-table files (their primary-key writer builds no
index yet), so one JVM per version writes an append table per case; we index the rows of each
of its data files (read back with pyarrow, fed in small batches as our writer does) and compare
with the blob Java embedded in the manifest or wrote beside the file: the same placement and
size, the same (column, index type) sections, each bloom filter's bytes and each bitmap's rows
per value and null rows equal (our header and dictionaries are in a plain sorted order, Java's
in its HashMaps' order). Java's own index reader then tests both blobs with the same predicates
(eq, notEq and in on values the table holds and values it lacks, isNull, isNotNull, on columns
and map keys) and gives the same verdicts. These releases build bloom filters and V1 bitmaps, of
columns and of map keys (`m[k]`); their bitmap writer ignores `version`, which we read as 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from pypaimon.schema.table_schema import TableSchema

from dagster_paimon.io.fileindex import FileIndexBuilder, file_index_plan
from tests.io.fileindex.reader import bitmap_rows, sections

pytestmark = pytest.mark.slow

NUMBERS = [
    ["i", "INT"],
    ["l", "BIGINT"],
    ["t", "TINYINT"],
    ["s", "SMALLINT"],
    ["f", "FLOAT"],
    ["d", "DOUBLE"],
    ["dt", "DATE"],
    ["tm", "TIME"],
    ["ts3", "TIMESTAMP(3)"],
    ["ts6", "TIMESTAMP(6)"],
]


def _column(kind: str, rows: int, rng: np.random.Generator, distinct: int) -> list:
    """JSON values of one column: `distinct` values drawn with repeats, about 1 in 9 null."""
    pick = rng.integers(0, distinct, rows)
    if kind in ("INT", "DATE"):
        values = [int(v) * 7919 - 30_000 for v in pick]
    elif kind == "TIME":
        values = [int(v) * 1_000 % 86_400_000 for v in pick]
    elif kind == "BIGINT":
        values = [int(v) * 1_000_000_007 - 2**40 for v in pick]
    elif kind == "TINYINT":
        values = [int(v) % 256 - 128 for v in pick]
    elif kind == "SMALLINT":
        values = [int(v) * 37 % 65536 - 32768 for v in pick]
    elif kind in ("FLOAT", "DOUBLE"):
        specials = ["NaN", "-0.0", 0.0, "Infinity", "-Infinity"]
        values = [specials[v] if v < len(specials) else float(v) / 8 - 3.5 for v in pick]
    elif kind == "BOOLEAN":
        values = [bool(v % 2) for v in pick]
    elif kind.startswith("TIMESTAMP"):
        micro = kind.endswith("(6)")
        values = [
            [int(v) * 3_601_001 - 5_000_000, (int(v) % 997) * 1000 if micro else 0] for v in pick
        ]
    elif kind == "BYTES":
        values = [bytes([v % 256, v // 256, 0, 255] * (v % 11)).hex() for v in pick]
    else:
        values = [("k" * (int(v) % 40)) + f"é{v}\u4e2d" if v % 3 else f"v{v}" for v in pick]
    return [None if rng.random() < 0.11 else v for v in values]


def _table(name: str, columns: list, options: dict, rows: int, distinct: int, seed: int) -> dict:
    """One append table's spec for FileIndexJava: columns, options, generated rows."""
    rng = np.random.default_rng(seed)
    data = [_column(kind, rows, rng, distinct) for _, kind in columns]
    return {
        "table": name,
        "columns": columns,
        "options": {"file.format": "parquet", **options},
        "rows": [list(r) for r in zip(*data, strict=True)],
    }


def _all(index: str, columns: list) -> dict:
    """`file-index.<index>.columns` over every column."""
    return {f"file-index.{index}.columns": ",".join(c for c, _ in columns)}


def _v1(columns: list) -> dict:
    """Bitmap version 1 on every column (what these Java releases write)."""
    return {f"file-index.bitmap.{c}.version": "1" for c, _ in columns}


STRINGS = [["s", "STRING"], ["b", "BYTES"], ["v", "VARCHAR(60)"]]
# (Java 0.9 and 1.0 fail on BOOLEAN bitmaps: their writer casts the value to Byte)
BITMAP = [*NUMBERS, ["st", "STRING"]]
BLOOM_OPTIONS = {"file-index.bloom-filter.i.items": "50", "file-index.bloom-filter.l.fpp": "0.01"}
CASES = [
    _table(
        "bloom_numbers", NUMBERS, {**_all("bloom-filter", NUMBERS), **BLOOM_OPTIONS}, 300, 120, 1
    ),
    # more values than the filter was sized for, strings past XXH64's 32-byte stripes
    _table(
        "bloom_strings",
        STRINGS,
        {
            **_all("bloom-filter", STRINGS),
            **{f"file-index.bloom-filter.{c}.items": "20" for c, _ in STRINGS},
        },
        500,
        400,
        2,
    ),
    # small enough to be embedded in the manifest
    _table(
        "bloom_embedded",
        [["i", "INT"]],
        {"file-index.bloom-filter.columns": "i", "file-index.bloom-filter.i.items": "30"},
        40,
        40,
        3,
    ),
    _table(
        "bloom_all_null",
        [["i", "INT"], ["n", "BIGINT"]],
        {"file-index.bloom-filter.columns": "n", "file-index.bloom-filter.n.items": "100"},
        20,
        1,
        4,
    ),
    _table("bitmap_mixed", BITMAP, {**_all("bitmap", BITMAP), **_v1(BITMAP)}, 400, 30, 5),
    # a few thousand distinct values: Java's HashMap grows many times
    _table(
        "bitmap_many",
        [["i", "INT"], ["st", "STRING"], ["l", "BIGINT"]],
        {
            **_all("bitmap", [["i", ""], ["st", ""], ["l", ""]]),
            **_v1([["i", ""], ["st", ""], ["l", ""]]),
        },
        20_000,
        6_000,
        6,
    ),
    _table(
        "bitmap_threshold",
        [["i", "INT"]],
        {
            "file-index.bitmap.columns": "i",
            "file-index.bitmap.i.version": "1",
            "file-index.in-manifest-threshold": "10 kb",
        },
        300,
        5,
        7,
    ),
    # two index types on different columns, and a column nobody indexes
    _table(
        "mixed_types",
        [["a", "INT"], ["b", "STRING"], ["c", "BIGINT"], ["d", "DOUBLE"]],
        {
            "file-index.bloom-filter.columns": "a,c",
            "file-index.bitmap.columns": "b,d",
            "file-index.bitmap.b.version": "1",
            "file-index.bitmap.d.version": "1",
            "file-index.bloom-filter.a.items": "200",
        },
        250,
        60,
        8,
    ),
]
# indexes of map keys: the map column's options, then each key's own (one index type per map:
# 0.9 and 1.0 keep one maintainer per column name)
MAP_KEYS = ["a", "b", "c", "zz", "é"]


def _maps(rows: int, seed: int, value) -> list:
    """Map values: a few of MAP_KEYS each, some maps empty, about 1 in 9 null."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(rows):
        keys = rng.permutation(MAP_KEYS)[: int(rng.integers(0, len(MAP_KEYS) + 1))]
        entry = [[str(k), value(rng)] for k in keys]
        out.append(None if rng.random() < 0.11 else entry)
    return out


for name, value_type, options, value in (
    (
        "map_bloom",
        "INT",
        {
            "file-index.bloom-filter.columns": "m[a],m[b],m[zz],m[é]",
            "file-index.bloom-filter.m.items": "40",
            "file-index.bloom-filter.m[b].items": "300",
        },
        lambda rng: None if rng.random() < 0.1 else int(rng.integers(-50, 50)),
    ),
    (
        "map_bitmap",
        "STRING",
        {"file-index.bitmap.columns": "m[a],m[c]", "file-index.bitmap.m.version": "1"},
        lambda rng: f"v{int(rng.integers(0, 12))}",
    ),
):
    spec = _table(name, [["i", "INT"]], options, 300, 50, 11)
    spec["columns"].append(["m", f"MAP<STRING, {value_type}>"])
    for row, entry in zip(spec["rows"], _maps(300, 12, value), strict=True):
        row.append(entry)
    CASES.append(spec)

# a column with a single null row and one that is all null
ONE_NULL = _table(
    "bitmap_nulls",
    [["i", "INT"], ["n", "INT"]],
    {"file-index.bitmap.columns": "i,n", **_v1([["i", ""], ["n", ""]])},
    50,
    10,
    9,
)
for r, row in enumerate(ONE_NULL["rows"]):
    row[0] = None if r == 17 else r % 10
    row[1] = None
CASES.append(ONE_NULL)


@pytest.fixture(params=["0.9", "1.0"])
def java(request):
    """Paimon's Java writer of each release."""
    return request.getfixturevalue("paimon_java" if request.param == "0.9" else "paimon_java_1_0")


# a bitmap's values as struct codes by SQL type; floats as their bits, so NaN keys compare
BITMAP_VALUES = {
    "INT": "i",
    "DATE": "i",
    "TIME": "i",
    "FLOAT": "i",
    "BIGINT": "q",
    "DOUBLE": "q",
    "TIMESTAMP(3)": "q",
    "TIMESTAMP(6)": "q",
    "TINYINT": "b",
    "SMALLINT": "h",
    "STRING": "s",
    "VARCHAR(60)": "s",
}
# a value no case's table is built to hold, per SQL type (a hit only has to agree with Java's)
ABSENT = {
    "INT": 123_456_789,
    "DATE": 99_999,
    "TIME": 86_399_999,
    "BIGINT": 2**50 + 3,
    "TINYINT": 127,
    "SMALLINT": 32_767,
    "FLOAT": 12345.5,
    "DOUBLE": -12345.25,
    "TIMESTAMP(3)": [123_456_789_012, 0],
    "TIMESTAMP(6)": [123_456_789_012, 1000],
    "BYTES": "0badc0de",
}
MAX_VALUES = 80  # of each indexed column, tested one by one


def sql_types(spec: dict) -> dict[str, str]:
    """Each index column's SQL type: a map key `m[k]` has its map's value type."""
    types = {name: kind for name, kind in spec["columns"]}
    for name, kind in spec["columns"]:
        if kind.startswith("MAP<"):
            value_type = kind[len("MAP<") : -1].split(",", 1)[1].strip()
            types.update({f"{name}[{k}]": value_type for k in MAP_KEYS})
    return types


def meaning(blob: bytes, types: dict[str, str]) -> dict:
    """What a blob says, whatever its order: per (column, index type) a bloom filter's bytes,
    or a bitmap's row count, rows of each value and null rows."""
    out: dict = {}
    for (column, kind), body in sections(blob).items():
        assert kind in ("bloom-filter", "bitmap"), kind
        out[(column, kind)] = (
            bitmap_rows(body, BITMAP_VALUES[types[column]]) if kind == "bitmap" else body
        )
    return out


def held(spec: dict, column: str) -> list:
    """The distinct JSON values the table holds in an index column (a map key's values)."""
    names = [name for name, _ in spec["columns"]]
    if column in names:
        values = [row[names.index(column)] for row in spec["rows"]]
    else:
        name, key = column[:-1].split("[", 1)
        maps = [row[names.index(name)] for row in spec["rows"]]
        values = [v for m in maps if m for k, v in m if k == key]
    distinct = {json.dumps(v): v for v in values if v is not None}
    return list(distinct.values())[:MAX_VALUES]


def predicates(spec: dict, columns: set[str], types: dict[str, str]) -> list:
    """Predicates on every index column: eq on each value held, eq, notEq and in on a value it
    lacks, isNull and isNotNull."""
    out: list = []
    for column in sorted(columns):
        values = held(spec, column)
        absent = ABSENT.get(types[column], "absent\u2603")
        out += [[column, "eq", v] for v in values]
        out += [[column, "eq", absent], [column, "notEq", absent], [column, "in", [absent]]]
        out += [[column, "in", [absent, *values[:1]]], [column, "isNull"], [column, "isNotNull"]]
    return out


def test_indexes_say_what_javas_say(java, tmp_path):
    """Every case's every data file: our index holds what Java's does, placed alike, and Java's
    reader gives the same verdicts on both."""
    warehouse = str(tmp_path / "warehouse")
    files = java.file_index_tables(warehouse, CASES)
    assert {f["table"] for f in files} == {c["table"] for c in CASES}
    specs = {c["table"]: c for c in CASES}
    where = {"embedded": 0, "sidecar": 0}
    checks = []
    for n, f in enumerate(files):
        root = Path(warehouse) / "db.db" / f["table"]
        schema = TableSchema.from_json((root / "schema" / "schema-0").read_text())
        plan = file_index_plan(schema.options, schema.fields)
        builder = FileIndexBuilder(plan)
        for batch in pq.read_table(root / f"bucket-{f['bucket']}" / f["file"]).to_batches(
            max_chunksize=97
        ):
            builder.write(batch)
        ours = builder.finish()
        if f["embedded"] is not None:
            where["embedded"] += 1
            assert f["extra"] == []
            assert ours.embedded is not None, f["table"]
            theirs = bytes.fromhex(f["embedded"])
            blobs = [{"index": ours.embedded.hex()}, {"index": f["embedded"]}]
        else:
            where["sidecar"] += 1
            assert f["extra"] == [f["file"] + ".index"], f["table"]
            assert ours.sidecar is not None, f["table"]
            sidecar = root / f"bucket-{f['bucket']}" / f["extra"][0]
            theirs = sidecar.read_bytes()
            mine = tmp_path / f"ours-{n}.index"
            mine.write_bytes(ours.sidecar)
            blobs = [{"path": str(mine)}, {"path": str(sidecar)}]
        blob = ours.embedded or ours.sidecar
        assert len(blob) == len(theirs), f["table"]
        spec = specs[f["table"]]
        types = sql_types(spec)
        assert meaning(blob, types) == meaning(theirs, types), f["table"]
        tested = predicates(spec, {c for c, _ in sections(theirs)}, types)
        checks += [{"columns": spec["columns"], "predicates": tested, **b} for b in blobs]
    assert where["embedded"] >= 2 and where["sidecar"] >= 4
    verdicts = java.file_index_verdicts(checks)
    assert len(verdicts) == len(checks)
    for ours_kept, theirs_kept in zip(verdicts[::2], verdicts[1::2], strict=True):
        assert ours_kept == theirs_kept
    assert not all(all(kept) for kept in verdicts)  # the indexes skip files, not only keep them

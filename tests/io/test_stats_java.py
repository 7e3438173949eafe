"""Our compaction's data file stats against Paimon's Java compaction of the same rows.

Java writes the same commits into two tables; it compacts one itself, we compact the other, and
the key and value stats of the two outputs are compared decoded, column for column. The Java
harness versions (0.9 and the 1.0 snapshot of September 2024) predate `_VALUE_STATS_COLS`, the
per-level / keep-first-n / changelog modes and the release-1.0.0 rule giving key columns
truncate(128): value stats are compared exactly in every mode; key stats exactly where the
versions agree (Avro, whose collector never had that rule), elsewhere against Java's full-mode
key stats (our keys are shorter than 128 characters). Java's schema validation refuses
`fields._KEY_<k>.stats-mode`, so no table can override the key rule.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import open_table

pytestmark = pytest.mark.slow

COLUMNS = [["k", "STRING"], ["id", "INT"], ["v", "STRING"], ["n", "BIGINT"], ["d", "DOUBLE"]]
KEYS = ["k", "id"]
FIRST = [
    ["+I", f"key-{'x' * 20}-{i:02d}", i, f"välue-€-{'ß' * 10}-{i}" if i % 3 else None, i * 7, i / 4]
    for i in range(12)
]
# updates: longer strings, one whose max cannot be truncated (U+10FFFF), negative numbers
SECOND = [
    ["+U", r[1], r[2], "zz" * 12 if r[2] % 4 else None, -r[4], r[5] - 1] for r in FIRST[::2]
] + [["+I", "zzz-key", 99, "\U0010ffff" * 20, None, None]]
MODES = {
    "default": {},
    "none": {"metadata.stats-mode": "none"},
    "counts": {"metadata.stats-mode": "counts"},
    "full": {"metadata.stats-mode": "full"},
    "truncate-5": {"metadata.stats-mode": "truncate(5)"},
    "per-column": {
        "metadata.stats-mode": "none",
        "fields.v.stats-mode": "truncate(4)",
        "fields.d.stats-mode": "full",
        "fields.n.stats-mode": "counts",
    },
    # Java before 1.0.0 ignores dense store: its sparse stats must decode as our dense ones
    "dense": {"metadata.stats-dense-store": "true", "fields.n.stats-mode": "none"},
}
FORMATS = ("parquet", "orc", "avro")


def decoded(stats, names: list[str]) -> dict[str, tuple]:
    """Every column's (min, max, null count); a column left out (dense store) has none."""
    out = dict.fromkeys(names, (None, None, None))
    row_min, row_max = stats.min_values, stats.max_values
    for i in range(row_min.arity):
        name = row_min.fields[i].name
        nulls = stats.null_counts[i] if stats.null_counts else None
        out[name] = (row_min.get_field(i), row_max.get_field(i), nulls)
    return out


def output(warehouse: str) -> dict:
    """The one file of the compacted table: its level, stats columns, key and value stats."""
    table = open_table(warehouse, "db.t")
    snapshot = table.snapshot_manager().get_latest_snapshot()
    (entry,) = live_entries(table, snapshot, with_stats=True)
    f = entry.file
    values = [c for c, _ in COLUMNS]
    return {
        "warehouse": warehouse,
        "level": f.level,
        "rows": f.row_count,
        "cols": f.value_stats_cols,
        "keys": decoded(f.key_stats, KEYS),
        "values": decoded(f.value_stats, values),
    }


def spec(file_format: str, options: dict) -> dict:
    """The table both writers create: one bucket, keyed by (k, id)."""
    return {
        "columns": COLUMNS,
        "primaryKeys": KEYS,
        "partitionKeys": [],
        "options": {"bucket": "1", "file.format": file_format, **options},
    }


def both(java, root: Path, file_format: str, options: dict) -> tuple[dict, dict]:
    """Java's compaction output and ours, for the same two commits of the same rows."""
    theirs, ours = str(root / "java"), str(root / "ours")
    for warehouse in (theirs, ours):
        shutil.rmtree(warehouse, ignore_errors=True)
    java.write(theirs, "db", "t", [FIRST, SECOND, "compact"], spec=spec(file_format, options))
    java.write(ours, "db", "t", [FIRST, SECOND], spec=spec(file_format, options))
    PaimonTable.open(ours, "db.t").compact(full=True)
    return output(theirs), output(ours)


@pytest.fixture(scope="module")
def compacted(paimon_java_1_0, tmp_path_factory):
    """Both outputs per (format, mode), as `both` makes them with Java 1.0: every table of the
    module written by one JVM (a job per table, each as `write` does it), then ours compacted."""
    root = tmp_path_factory.mktemp("stats")
    pairs = {
        (f, m): (str(root / f"{f}-{m}" / "java"), str(root / f"{f}-{m}" / "ours"))
        for f in FORMATS
        for m in MODES
    }
    jobs = []
    for (file_format, mode), (theirs, ours) in pairs.items():
        table = {"database": "db", "table": "t", "mode": "stream"}
        table["spec"] = spec(file_format, MODES[mode])
        jobs.append({**table, "warehouse": theirs, "steps": [FIRST, SECOND, "compact"]})
        jobs.append({**table, "warehouse": ours, "steps": [FIRST, SECOND]})
    for job, lines in zip(jobs, paimon_java_1_0.start_writes(jobs)(), strict=True):
        assert lines and "error" not in lines[-1], f"{job['warehouse']}: {lines}"
    cache: dict[tuple[str, str], tuple[dict, dict]] = {}
    for key, (theirs, ours) in pairs.items():
        PaimonTable.open(ours, "db.t").compact(full=True)
        cache[key] = (output(theirs), output(ours))
    return lambda file_format, mode: cache[file_format, mode]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("file_format", FORMATS)
def test_value_and_key_stats_match_java_compaction(compacted, file_format, mode):
    theirs, ours = compacted(file_format, mode)
    assert ours["level"] == theirs["level"] and ours["rows"] == theirs["rows"] == 13
    assert ours["values"] == theirs["values"]
    dense = MODES[mode].get("metadata.stats-dense-store") == "true"
    assert theirs["cols"] is None
    assert ours["cols"] == (["k", "id", "v", "d"] if dense else None)

    if file_format == "avro":
        assert ours["keys"] == theirs["keys"]
    else:  # release-1.0.0 on: _KEY_ columns are truncate(128), i.e. in full for these keys
        assert ours["keys"] == compacted(file_format, "full")[0]["keys"]


def test_the_oracle_sees_what_we_compare(compacted):
    """The rows reach every path: truncated and incremented max, an unboundable max, counts."""
    theirs, _ = compacted("parquet", "default")
    assert theirs["values"]["k"] == ("key-xxxxxxxxxxxx", "zzz-key", 0)
    assert theirs["values"]["v"] == (None, None, 5)  # U+10FFFF... has no truncated bound
    full, _ = compacted("parquet", "full")
    assert full["values"]["v"] == ("välue-€-ßßßßßßßßßß-1", "\U0010ffff" * 20, 5)
    assert full["values"]["n"] == (-70, 77, 1)
    per_column, _ = compacted("parquet", "per-column")
    assert per_column["values"]["v"] == (None, None, 5)  # max not boundable: min dropped
    assert per_column["values"]["n"] == (None, None, 1)
    assert per_column["keys"]["k"] == (None, None, None)  # Java 1.0-SNAPSHOT: the table's none


@pytest.mark.parametrize(("file_format", "mode"), [("parquet", "default"), ("avro", "per-column")])
def test_java_0_9_compaction_agrees_too(paimon_java, tmp_path, file_format, mode):
    theirs, ours = both(paimon_java, tmp_path, file_format, MODES[mode])
    assert ours["values"] == theirs["values"]
    if file_format == "avro":
        assert ours["keys"] == theirs["keys"]


@pytest.mark.parametrize("mode", ["dense", "none", "default"])
def test_java_0_9_reads_our_files_as_its_own(compacted, paimon_java, mode):
    """Java 0.9 reads manifests we write (`_VALUE_STATS_COLS` and later fields it does not know
    are resolved away by name) and the rows of our files, as it reads its own compaction's."""
    theirs, ours = compacted("parquet", mode)
    rows = paimon_java.read(ours["warehouse"], "db", "t")
    assert sorted(map(str, rows)) == sorted(
        map(str, paimon_java.read(theirs["warehouse"], "db", "t"))
    )
    assert len(rows) == 13

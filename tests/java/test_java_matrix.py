"""Our maintenance on every kind of primary-key table Paimon's Java writers (0.9 and 1.0) make.

Each configuration (merge engine, changelog producer, layout, format, schema change, tags) is
written by Java, then every step runs in turn: our health, minor and full compaction, snapshot
and changelog expiry, manifest compaction, orphan removal, and Java's writer appending and
compacting again on what we left. After each step Java (every version that reads the table)
reads the latest snapshot, every retained snapshot and every tag, and each read must equal an
independent model of what the merge engine makes of the rows written; pypaimon reads the latest
snapshot, the tags and every snapshot it has not read yet (all of them again after a step that
deletes files). Where the table produces a changelog, Java's streaming read of it, replayed,
must reach the model too, and long-lived changelogs must be their snapshots with their files.

For speed all tables go through each step together: one JVM per Java version writes all of its
tables, one JVM per version reads every table's snapshots while pypaimon reads them in-process.
The module-scoped `matrix` runs it all once; each test case asserts one (table, step)'s findings.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from dagster_paimon import cli
from dagster_paimon.maintenance.options import RetentionOverrides
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.table import open_table
from tests.hooks import compact_manifests, expire_changelogs, expire_snapshots, remove_orphans
from tests.java.paimon_java import PAIMON_0_9, PAIMON_1_0, PaimonJava
from tests.java.test_java_tables import pypaimon_reads_java_manifests
from tests.lsm.kvmodel import read_rows

pytestmark = pytest.mark.slow

DAYS = ("2024-01-01", "2024-01-02")
DEDUP_COLUMNS = (("dt", "STRING"), ("id", "INT"), ("v", "STRING"), ("n", "BIGINT"), ("d", "DOUBLE"))
PARTIAL_COLUMNS = (
    ("dt", "STRING"),
    ("id", "INT"),
    ("a", "STRING"),
    ("sa", "BIGINT"),
    ("b", "STRING"),
    ("sb", "BIGINT"),
    ("c", "STRING"),
)
ADDED = ("e", "INT")  # the column the schema-evolution table gains mid-way

Key = tuple[str, int]
Row = dict[str, object]

# Steps, in order; "java" is Java's first write, "java-append" its write on what we left.
STEPS = (
    "java",
    "health",
    "minor",
    "full",
    "expire-snapshots",
    "expire-changelogs",
    "manifests",
    "orphans",
    "java-append",
)
SNAPSHOTS_KEPT = 2
# Steps that delete files: only after these can a snapshot read differently than it did (a
# snapshot is immutable), so only then does pypaimon read again the snapshots it has checked.
DELETING = ("expire-snapshots", "expire-changelogs", "orphans")


# --- independent models: what each merge engine makes of the records of a key, in write order


class Model:
    """The table as it should read, by primary key."""

    def __init__(self) -> None:
        self.rows: dict[Key, Row] = {}

    def apply(self, kind: str, row: Row) -> None:
        """One record, in write order."""
        raise NotImplementedError


class Deduplicate(Model):
    """Last write wins; with a sequence field the largest sequence wins (ties: the later)."""

    def __init__(self, sequence_field: str | None = None) -> None:
        super().__init__()
        self.sequence_field = sequence_field

    def apply(self, kind: str, row: Row) -> None:
        """An older sequence loses to the stored row, retraction or not."""
        key = (row["dt"], row["id"])
        current = self.rows.get(key)
        seq = self.sequence_field
        if seq and current is not None and row[seq] < current[seq]:  # type: ignore[operator]
            return
        if kind in ("-U", "-D"):
            self.rows.pop(key, None)
        else:
            self.rows[key] = dict(row)


class FirstRow(Model):
    """The first write of a key stays; later ones are ignored."""

    def apply(self, kind: str, row: Row) -> None:
        """Inserts only: the feed never retracts a first-row table."""
        assert kind in ("+I", "+U")
        self.rows.setdefault((row["dt"], row["id"]), dict(row))


class PartialUpdate(Model):
    """Ungrouped columns: last non-null value; a sequence group's columns all move together
    when the record's group sequence is non-null and not older than the stored one."""

    def __init__(self, groups: dict[str, tuple[str, ...]]) -> None:
        super().__init__()
        self.groups = groups

    def apply(self, kind: str, row: Row) -> None:
        """Updates only: the feed never retracts a partial-update table."""
        assert kind in ("+I", "+U")
        stored = self.rows.setdefault((row["dt"], row["id"]), dict.fromkeys(row))
        grouped = {c for seq, cols in self.groups.items() for c in (seq, *cols)}
        for column, value in row.items():
            if column not in grouped and value is not None:
                stored[column] = value
        for seq, columns in self.groups.items():
            if row[seq] is None:
                continue
            if stored[seq] is None or row[seq] >= stored[seq]:  # type: ignore[operator]
                for column in (seq, *columns):
                    stored[column] = row[column]


class Aggregate(Model):
    """sum and last_non_null_value, both retractable (a retracted non-null value clears the
    last one), and max; every key written stays, as aggregation emits only inserts."""

    def __init__(
        self, sums: tuple[str, ...], lasts: tuple[str, ...], maxes: tuple[str, ...] = ()
    ) -> None:
        super().__init__()
        self.sums, self.lasts, self.maxes = sums, lasts, maxes

    def apply(self, kind: str, row: Row) -> None:
        """Retractions subtract from sums and clear last values."""
        key = (row["dt"], row["id"])
        retract = kind in ("-U", "-D")
        stored = self.rows.get(key)
        if stored is None:
            assert not retract, "the feed retracts only keys it wrote"
            self.rows[key] = dict(row)
            return
        for column in self.sums:
            if row[column] is not None:
                sign = -1 if retract else 1
                stored[column] = (stored[column] or 0) + sign * row[column]  # type: ignore[operator]
        for column in self.lasts:
            if row[column] is not None:
                stored[column] = None if retract else row[column]
        for column in self.maxes:
            assert not retract, "max retracts nothing"
            if row[column] is not None and (stored[column] is None or row[column] > stored[column]):  # type: ignore[operator]
                stored[column] = row[column]


# --- configurations


@dataclass(frozen=True)
class Config:
    """One kind of table: options, its model, what a commit writes and Java's step scripts.

    A script is a sequence of "w" (one commit), "compact" (Java's full compaction), "alter"
    (add column e) and "tag:NAME"."""

    name: str
    options: dict[str, str]
    model: Callable[[], Model]
    columns: tuple[tuple[str, str], ...] = DEDUP_COLUMNS
    feed: str = "changes"  # changes | inserts | partial
    values: str = "dedup"  # dedup | agg
    late: bool = False  # also write stale sequence numbers
    script: tuple[str, ...] = ("w", "w", "tag:t1", "w", "w")
    append: tuple[str, ...] = ("w", "tag:t2", "w", "compact")
    skip_level0: bool = False  # batch reads skip level 0 (deletion vectors, first-row)
    pypaimon: bool = True  # whether pypaimon 2.1 reads this table (else Java alone checks)
    changelog_at: tuple[str, ...] = ()  # steps after which the changelog is complete


CHANGELOG_RETENTION = {"changelog.num-retained.min": "4"}  # outlives snapshots: decoupled
EVERY_STEP = tuple(s for s in STEPS if s != "health")

CONFIGS = (
    Config("dedup_write_only", {"write-only": "true"}, Deduplicate),
    Config(
        "dedup_write_only_compacted",
        {"write-only": "true"},
        Deduplicate,
        script=("w", "w", "tag:t1", "compact", "w", "w"),
    ),
    Config(
        "dedup_levels",
        {"num-sorted-run.compaction-trigger": "2"},
        Deduplicate,
        script=("w", "w", "tag:t1", "w", "compact", "w", "w"),
    ),
    Config(
        "partial_update",
        {
            "merge-engine": "partial-update",
            "fields.sa.sequence-group": "a",
            "fields.sb.sequence-group": "b",
        },
        lambda: PartialUpdate({"sa": ("a",), "sb": ("b",)}),
        columns=PARTIAL_COLUMNS,
        feed="partial",
        pypaimon=False,  # NotImplementedError: partial-update with sequence groups
    ),
    Config(
        "aggregation",
        {
            "merge-engine": "aggregation",
            "fields.n.aggregate-function": "sum",
            "fields.d.aggregate-function": "sum",
            "fields.v.aggregate-function": "last_non_null_value",
        },
        lambda: Aggregate(("n", "d"), ("v",)),
        values="agg",
        pypaimon=False,  # NotImplementedError: aggregation reading retractions
    ),
    Config(
        "aggregation_inserts",  # no retraction: pypaimon reads it too
        {
            "merge-engine": "aggregation",
            "fields.n.aggregate-function": "sum",
            "fields.d.aggregate-function": "max",
            "fields.v.aggregate-function": "last_non_null_value",
        },
        lambda: Aggregate(("n",), ("v",), maxes=("d",)),
        feed="inserts",
        values="agg",
    ),
    Config("first_row", {"merge-engine": "first-row"}, FirstRow, feed="inserts", skip_level0=True),
    Config("deletion_vectors", {"deletion-vectors.enabled": "true"}, Deduplicate, skip_level0=True),
    Config(
        "deletion_vectors_compact_job",
        {"deletion-vectors.enabled": "true", "write-only": "true"},
        Deduplicate,
        script=("w", "w", "tag:t1", "compact", "w", "w"),
        skip_level0=True,
    ),
    Config(
        "changelog_lookup",
        {"changelog-producer": "lookup", **CHANGELOG_RETENTION},
        Deduplicate,
        changelog_at=EVERY_STEP,
    ),
    Config(
        "changelog_input",
        {"changelog-producer": "input", **CHANGELOG_RETENTION},
        Deduplicate,
        changelog_at=EVERY_STEP,
    ),
    Config(
        "changelog_full_compaction",
        {
            "changelog-producer": "full-compaction",
            "full-compaction.delta-commits": "2",
            **CHANGELOG_RETENTION,
        },
        Deduplicate,
        # only a full compaction produces it: ours, or Java's compaction step
        changelog_at=tuple(s for s in EVERY_STEP if s not in ("java", "minor")),
    ),
    Config(
        "sequence_field",
        {"sequence.field": "n", "write-only": "true"},
        lambda: Deduplicate("n"),
        late=True,
    ),
    Config("bucket_key", {"bucket-key": "id", "write-only": "true"}, Deduplicate),
    Config(
        "dynamic_bucket",
        {"bucket": "-1", "dynamic-bucket.target-row-num": "6"},
        Deduplicate,
    ),
    Config("orc", {"file.format": "orc", "write-only": "true"}, Deduplicate),
    Config(
        "avro",
        {"file.format": "avro", "num-sorted-run.compaction-trigger": "2"},
        Deduplicate,
    ),
    Config(
        "parquet_gzip",
        {"file.format": "parquet", "file.compression": "gzip", "write-only": "true"},
        Deduplicate,
        script=("w", "w", "tag:t1", "compact", "w", "w"),
    ),
    Config(
        "schema_evolution",
        {"write-only": "true"},
        Deduplicate,
        script=("w", "w", "tag:t1", "alter", "w", "w"),
    ),
)
VERSIONS = {"0.9": PAIMON_0_9, "1.0": PAIMON_1_0}

# Findings too large to fix here; each reason names the bug (see the module's report).
XFAIL: dict[tuple[str, str, str], str] = {}


# --- feeds: the rows each commit writes, applied to the model as Java gets them


class Feed:
    """Generates a table's commits and keeps its model (and every state it passed through)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.model = config.model()
        self.columns = [name for name, _ in config.columns]
        self.last_input: dict[Key, Row] = {}
        self.commits = 0

    def state(self) -> list[Row]:
        """The model's rows now, detached from later writes."""
        return copy.deepcopy(list(self.model.rows.values()))

    def _emit(self, out: list[list], kind: str, row: Row) -> None:
        """One record to Java's writer and the model; every column named, absent ones null."""
        full = {c: row.get(c) for c in self.columns}
        out.append([kind, *full.values()])
        self.model.apply(kind, full)
        if kind in ("+I", "+U"):
            self.last_input[(full["dt"], full["id"])] = full  # type: ignore[index]

    def _values(self, c: int, i: int) -> Row:
        """A record's non-key values in commit c."""
        if self.config.values == "agg":
            return {"v": f"c{c}-{i}", "n": i + c, "d": float((i * (c + 1)) % 7)}
        row: Row = {"v": f"c{c}-{i}", "n": c * 1000 + i, "d": i / 4}
        if ADDED[0] in self.columns:
            row[ADDED[0]] = c * 100 + i
        return row

    def commit(self) -> list[list]:
        """The next commit's records for Java's writer ([row kind, values...])."""
        c = self.commits
        self.commits += 1
        out: list[list] = []
        upserts = range(3 * c, 3 * c + 8)
        for day in DAYS:
            present = [i for i in range(3 * c + 8) if (day, i) in self.model.rows]
            if self.config.feed == "partial":
                for i in upserts:
                    self._emit(
                        out, "+U" if (day, i) in self.model.rows else "+I", self._partial(c, day, i)
                    )
                continue
            for i in upserts:
                key = (day, i)
                row = {"dt": day, "id": i, **self._values(c, i)}
                if key in self.model.rows and self.config.feed == "changes" and c % 2:
                    self._emit(out, "-U", self.last_input[key])  # a changelog source's pair
                self._emit(out, "+U" if key in self.model.rows else "+I", row)
            if self.config.feed != "changes":
                continue
            if self.config.late:  # stale sequence numbers: the stored rows must win
                for i in present[:2]:
                    stale = dict(self.model.rows[(day, i)])
                    stale.update(v=f"late{c}-{i}", n=stale["n"] - 500)  # type: ignore[operator]
                    self._emit(out, "+U", stale)
            for i in range(c, c + 2):
                if (day, i) in self.model.rows:
                    self._emit(out, "-D", self.last_input[(day, i)])
        return out

    def _partial(self, c: int, day: str, i: int) -> Row:
        """One group per record in turn; every third group update carries a stale sequence."""
        row: Row = {"dt": day, "id": i}
        turn = (i + c) % 3
        seq = c * 10 - (15 if (i % 4 == 0 and c > 1) else 0)
        if turn == 0:
            row.update(a=f"a{c}-{i}", sa=seq)
        elif turn == 1:
            row.update(b=f"b{c}-{i}", sb=seq)
        else:
            row.update(c=f"c{c}-{i}")
        return row

    def steps(self, script: tuple[str, ...]) -> tuple[list, list[list[Row] | None]]:
        """Java's steps for a script, and the model's state after each (None: unchanged)."""
        steps: list = []
        states: list[list[Row] | None] = []
        for token in script:
            if token == "w":
                steps.append(self.commit())
                states.append(self.state())
            elif token == "compact":
                steps.append("compact")
                states.append(None)
            elif token == "alter":
                steps.append({"addColumn": list(ADDED)})
                self.columns.append(ADDED[0])
                states.append(None)
            else:
                steps.append({"tag": token.split(":", 1)[1]})
                states.append(None)
        return steps, states


# --- one table's run


@dataclass
class TableRun:
    """A configuration written by one Java version, and what every step found."""

    config: Config
    version: str
    warehouse: str
    feed: Feed
    readers: tuple[str, ...]
    expected: dict[int, list[Row] | None] = field(default_factory=dict)
    latest: int = 0
    findings: dict[str, list[str]] = field(default_factory=dict)
    compared: dict[str, int] = field(default_factory=dict)
    broken: str | None = None  # why later steps cannot run
    snapshot_json: dict[int, dict] = field(default_factory=dict)  # every snapshot file seen
    pypaimon_read: set[int] = field(default_factory=set)  # snapshots pypaimon checked

    @property
    def name(self) -> str:
        """Its table name in the version's warehouse."""
        return self.config.name

    @property
    def path(self) -> Path:
        """Its table directory."""
        return Path(self.warehouse) / "db.db" / self.name

    def table(self):
        """A fresh handle on the table (schema and snapshot as of now)."""
        return open_table(self.warehouse, f"db.{self.name}")

    def problem(self, step: str, text: str) -> None:
        """Record a finding of a step."""
        self.findings.setdefault(step, []).append(text)

    def snapshot_ids(self) -> list[int]:
        """Snapshot files present, by listing (not through any reader)."""
        names = os.listdir(self.path / "snapshot")
        return sorted(int(n.split("-", 1)[1]) for n in names if n.startswith("snapshot-"))

    def tags(self) -> dict[str, int]:
        """Every tag and the snapshot it holds."""
        tag_dir = self.path / "tag"
        if not tag_dir.exists():
            return {}
        return {
            p.name.removeprefix("tag-"): json.loads(p.read_text())["id"]
            for p in tag_dir.iterdir()
            if p.name.startswith("tag-")
        }


def level0_files(run: TableRun, snapshot: int) -> tuple[int, str]:
    """Level-0 files of a snapshot and its commit kind, as pypaimon's writer-side plan sees."""
    table = run.table().copy({"scan.snapshot-id": str(snapshot)})
    files = [
        f for s in table.new_read_builder().new_scan().plan_for_write().splits() for f in s.files
    ]
    kind = table.snapshot_manager().get_snapshot_by_id(snapshot).commit_kind
    return sum(1 for f in files if f.level == 0), kind


def assign(run: TableRun, upto: int, state: list[Row], step: str) -> None:
    """What each new snapshot up to `upto` must read: the model's state, except that where
    batch reads skip level 0, an append's new level-0 files change nothing yet."""
    for snapshot in range(run.latest + 1, upto + 1):
        if not run.config.skip_level0:
            run.expected[snapshot] = state
            continue
        with pypaimon_reads_java_manifests():
            level0, kind = level0_files(run, snapshot)
        if level0 == 0:
            run.expected[snapshot] = state
        elif kind == "APPEND":
            run.expected[snapshot] = run.expected.get(snapshot - 1, [] if snapshot == 1 else None)
        else:  # a compaction that left level 0 behind: part of the data is visible
            run.expected[snapshot] = None
            if step not in ("java", "java-append"):
                run.problem(step, f"snapshot {snapshot} ({kind}) left {level0} level-0 files")
    run.latest = max(run.latest, upto)


def java_write(runs: list[TableRun], step: str, javas: dict[str, PaimonJava]) -> None:
    """Java's writes of a step: each version's tables in one JVM, versions side by side."""
    plans: dict[str, list[tuple[TableRun, list[Row], list[list[Row] | None]]]] = {}
    waits = {}
    for version in javas:
        jobs, mine = [], []
        for run in runs:
            if run.version != version:
                continue
            first = step == "java"
            before = run.feed.state()
            steps, states = run.feed.steps(run.config.script if first else run.config.append)
            job: dict = {"warehouse": run.warehouse, "database": "db", "table": run.name}
            job.update(mode="stream", steps=steps)
            if first:
                job["spec"] = {
                    "columns": [list(c) for c in run.config.columns],
                    "primaryKeys": ["dt", "id"],
                    "partitionKeys": ["dt"],
                    "options": {"bucket": "2", **run.config.options},
                }
            jobs.append(job)
            mine.append((run, before, states))
        plans[version] = mine
        waits[version] = javas[version].start_writes(jobs)
    for version, wait in waits.items():
        for (run, logical, states), lines in zip(plans[version], wait(), strict=True):
            for line, after in zip(lines, states, strict=False):
                if "error" in line:
                    run.problem(step, "Java's writer failed: " + line["error"][:3000])
                    run.broken = run.broken or f"Java's writer failed at {step}"
                    break
                logical = after if after is not None else logical
                if line["snapshot"] is not None:
                    assign(run, line["snapshot"], logical, step)


# --- reads: Java (each version that reads the table) and pypaimon, against the model


def differences(fields: list[str], rows: list[Row], expected: list[Row]) -> str | None:
    """What a read got wrong, in a few rows; None when it equals the model."""
    got = Counter(tuple(r[f] for f in fields) for r in rows)
    want = Counter(tuple(r.get(f) for f in fields) for r in expected)
    if got == want:
        return None
    missing, extra = sorted(want - got, key=repr), sorted(got - want, key=repr)
    return f"{len(rows)} rows, {len(missing)} missing {missing[:3]}, {len(extra)} extra {extra[:3]}"


def targets(run: TableRun) -> list[tuple[str, dict, list[Row] | None]]:
    """Every read a step checks: the latest snapshot, each retained snapshot, each tag."""
    ids = run.snapshot_ids()
    if not ids:
        return []
    out: list[tuple[str, dict, list[Row] | None]] = [("latest", {}, run.expected.get(ids[-1]))]
    out += [(f"snapshot {i}", {"snapshot": i}, run.expected.get(i)) for i in ids]
    out += [
        (f"tag {name} (snapshot {i})", {"tag": name}, run.expected.get(i))
        for name, i in sorted(run.tags().items())
    ]
    return out


def changelog_ids(run: TableRun) -> list[int]:
    """Long-lived changelog files (of expired snapshots) present, by listing."""
    directory = run.path / "changelog"
    if not directory.is_dir():
        return []
    names = os.listdir(directory)
    return sorted(int(n.split("-", 1)[1]) for n in names if n.startswith("changelog-"))


def long_lived_changelogs(run: TableRun) -> list[str]:
    """A long-lived changelog is its expired snapshot as it was (Java's `new Changelog(snapshot)`)
    and every changelog file it lists is still there."""
    problems = []
    present = {name for _, _, names in os.walk(run.path) for name in names}
    table = run.table()
    for i in changelog_ids(run):
        kept = json.loads((run.path / "changelog" / f"changelog-{i}").read_text())
        # null and empty fields are absent to Java's reader (pypaimon's Snapshot drops them)
        was = {k: v for k, v in run.snapshot_json.get(i, kept).items() if v not in (None, {})}
        if was != {k: v for k, v in kept.items() if v not in (None, {})}:
            problems.append(f"changelog-{i} is not snapshot-{i} as it was: {kept}")
        if not kept.get("changelogManifestList"):
            continue
        with pypaimon_reads_java_manifests():
            try:
                lists = ManifestListManager(table).read(kept["changelogManifestList"])
                entries = [e for m in lists for e in ManifestFileManager(table).read(m.file_name)]
            except Exception as e:
                problems.append(f"changelog-{i}'s manifests unreadable: {e!r}")
                continue
        missing = sorted({e.file.file_name for e in entries} - present)
        if missing:
            problems.append(f"changelog-{i} lists {len(missing)} missing files: {missing[:3]}")
    return problems


def changelog_base(run: TableRun, start: int) -> list[Row] | None:
    """The state a changelog read from `start` on builds on: the table as of the last earlier
    snapshot that produced changelog (input: every append; lookup: the compaction after it;
    full-compaction: the last full compaction), or empty when none did."""
    produced = [
        i
        for i, snapshot in run.snapshot_json.items()
        if i < start and snapshot.get("changelogRecordCount")
    ]
    return run.expected.get(max(produced)) if produced else []


def replay(start: list[Row], records: list[Row]) -> list[Row]:
    """A deduplicate table's state after its changelog: +I/+U set the key, -U/-D remove it."""
    state = {(r["dt"], r["id"]): r for r in start}
    for record in records:
        kind = record.pop("_kind")
        if kind in ("-U", "-D"):
            state.pop((record["dt"], record["id"]), None)
        else:
            state[(record["dt"], record["id"])] = record
    return list(state.values())


def pypaimon_read(run: TableRun, travel: dict) -> tuple[list[str], list[Row]]:
    """pypaimon's own read of one target: its fields and rows."""
    table = run.table()
    if "snapshot" in travel:
        table = table.copy({"scan.snapshot-id": str(travel["snapshot"])})
    elif "tag" in travel:
        table = table.copy({"scan.tag-name": travel["tag"]})
    rows = read_rows(table)
    return [f.name for f in table.fields], rows


def check_reads(runs: list[TableRun], step: str, javas: dict[str, PaimonJava]) -> None:
    """Every reader reads every target of every table as its model says."""
    planned: dict[str, list[tuple[TableRun, str, Any]]] = {v: [] for v in javas}
    jobs: dict[str, list[dict]] = {v: [] for v in javas}
    checks: list[tuple[TableRun, str, dict, list[Row] | None]] = []
    for run in runs:
        if run.broken:
            continue
        for i in run.snapshot_ids():
            text = (run.path / "snapshot" / f"snapshot-{i}").read_text()
            run.snapshot_json.setdefault(i, json.loads(text))
        for label, travel, expected in targets(run):
            seen = travel.get("snapshot") in run.pypaimon_read
            if not seen or step in DELETING:
                checks.append((run, label, travel, expected))
            for version in run.readers:
                planned[version].append((run, label, expected))
                job = {"warehouse": run.warehouse, "database": "db", "table": run.name, **travel}
                jobs[version].append(job)
        for problem in long_lived_changelogs(run):
            run.problem(step, problem)
        if step in run.config.changelog_at:  # a stream from the earliest snapshot on
            ids = run.snapshot_ids()
            before = changelog_base(run, ids[0])
            for version in run.readers:
                label = f"changelog from {ids[0]}"
                planned[version].append((run, label, (before, run.expected.get(ids[-1]))))
                job = {"warehouse": run.warehouse, "database": "db", "table": run.name}
                jobs[version].append({**job, "changelogFrom": ids[0]})
    waits = {v: javas[v].start_reads(jobs[v]) for v in javas if jobs[v]}
    with pypaimon_reads_java_manifests():
        for run, label, travel, expected in checks:
            if not run.config.pypaimon:
                continue
            try:
                fields, rows = pypaimon_read(run, travel)
            except Exception as e:
                run.problem(step, f"pypaimon cannot read {label}: {e!r}")
                continue
            if "snapshot" in travel:
                run.pypaimon_read.add(travel["snapshot"])
            compare(run, step, f"pypaimon {label}", fields, rows, expected)
    for version, wait in waits.items():
        for (run, label, expected), result in zip(planned[version], wait(), strict=True):
            if "error" in result:
                run.problem(step, f"Java {version} cannot read {label}: {result['error'][:1500]}")
                continue
            fields = result["fields"]
            if label.startswith("changelog"):
                before, end = expected
                records = [dict(zip(["_kind", *fields], r, strict=True)) for r in result["rows"]]
                if before is not None and end is not None:
                    replayed = replay(copy.deepcopy(before), records)
                    compare(run, step, f"Java {version} {label}", fields, replayed, end)
                continue
            rows = [dict(zip(fields, r, strict=True)) for r in result["rows"]]
            compare(run, step, f"Java {version} {label}", fields, rows, expected)


def compare(
    run: TableRun,
    step: str,
    what: str,
    fields: list[str],
    rows: list[Row],
    expected: list[Row] | None,
) -> None:
    """One read against the model; a snapshot the model cannot tell is only read."""
    if expected is None:
        return
    run.compared[step] = run.compared.get(step, 0) + 1
    wrong = differences(fields, rows, expected)
    if wrong:
        run.problem(step, f"{what}: {wrong}")


# --- our steps


def data_files(run: TableRun) -> dict[tuple, list]:
    """Every data file's level and rows per (partition, bucket) of the latest snapshot, from
    pypaimon's writer-side plan (level 0 included)."""
    out: dict[tuple, list] = {}
    with pypaimon_reads_java_manifests():
        for split in run.table().new_read_builder().new_scan().plan_for_write().splits():
            key = (tuple(sorted(split.partition.to_dict().items())), split.bucket)
            out.setdefault(key, []).extend((f.level, f.row_count) for f in split.files)
    return out


def level0(run: TableRun) -> dict[tuple, int]:
    """Buckets of the latest snapshot with level-0 files, and how many."""
    counts = {k: sum(1 for level, _ in files if level == 0) for k, files in data_files(run).items()}
    return {k: n for k, n in counts.items() if n}


def health(run: TableRun) -> None:
    """The CLI's health JSON counts what pypaimon's plan holds, and changes nothing."""
    before = run.snapshot_ids()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(
            ["health", "--warehouse", run.warehouse, "--table", f"db.{run.name}", "--json"]
        )
    assert code == 0, f"dagster-paimon health exited {code}"
    report = json.loads(out.getvalue())
    ours = {
        (tuple(sorted(b["partition"].items())), b["bucket"]): (
            b["files"],
            b["level0_files"],
            b["rows"],
        )
        for b in report["buckets"]
    }
    theirs = {
        k: (len(files), sum(1 for level, _ in files if level == 0), sum(r for _, r in files))
        for k, files in data_files(run).items()
    }
    assert ours == theirs, f"health {ours} != pypaimon's plan {theirs}"
    assert report["unsupported"] == []
    assert run.snapshot_ids() == before, "health wrote a snapshot"


def minor(run: TableRun) -> None:
    """Paimon's pick per bucket; a table whose batch reads skip level 0 keeps none."""
    PaimonTable.open(run.warehouse, f"db.{run.name}").compact()
    if run.config.skip_level0:
        assert not level0(run), f"level-0 files left where reads skip them: {level0(run)}"


def full(run: TableRun) -> None:
    """Every bucket one sorted run on one level above 0 (already so: nothing to commit)."""
    PaimonTable.open(run.warehouse, f"db.{run.name}").compact(full=True)
    levels = {k: {level for level, _ in files} for k, files in data_files(run).items()}
    assert all(len(s) == 1 and 0 not in s for s in levels.values()), f"levels after: {levels}"


def expire_snapshots_step(run: TableRun) -> None:
    """Keep the newest snapshots only (tags keep theirs)."""
    before = run.snapshot_ids()
    expire_snapshots(
        run.table(), overrides=RetentionOverrides(retain_min=SNAPSHOTS_KEPT, time_retained_ms=0)
    )
    after = run.snapshot_ids()
    assert after == before[-SNAPSHOTS_KEPT:], f"snapshots {before} -> {after}"
    if "changelog-producer" in run.config.options:
        assert (run.path / "changelog").is_dir(), "no long-lived changelog kept"


def expire_changelogs_step(run: TableRun) -> None:
    """Long-lived changelogs past one expire."""
    expire_changelogs(run.table(), overrides=RetentionOverrides(retain_min=1, time_retained_ms=0))


def manifests(run: TableRun) -> None:
    """A full manifest compaction into a new snapshot."""
    compact_manifests(run.table(), full=True)


def orphans(run: TableRun) -> None:
    """Stray files in a bucket and in manifest/ go; nothing any snapshot or tag uses does."""
    bucket = next((run.path / "dt=2024-01-01").glob("bucket-*"))
    strays = [bucket / "data-stray-0.parquet", run.path / "manifest" / "manifest-stray-0"]
    for stray in strays:
        stray.write_bytes(b"stray")
    # every file counts as old: the clock is a minute ahead
    remove_orphans(run.table(), older_than_ms=1, now_ms=int(time.time() * 1000) + 60_000)
    left = [str(s) for s in strays if s.exists()]
    assert not left, f"orphans left: {left}"


OURS: dict[str, Callable[[TableRun], None]] = {
    "health": health,
    "minor": minor,
    "full": full,
    "expire-snapshots": expire_snapshots_step,
    "expire-changelogs": expire_changelogs_step,
    "manifests": manifests,
    "orphans": orphans,
}


def our_step(run: TableRun, step: str) -> None:
    """Run one of our steps on a table; its failure is that step's finding."""
    try:
        OURS[step](run)
    except Exception as e:
        run.problem(step, "".join(traceback.format_exception_only(e)).strip()[:3000])
    ids = run.snapshot_ids()
    if ids and ids[-1] > run.latest:
        assign(run, ids[-1], run.feed.state(), step)


@dataclass
class Matrix:
    """Every table's run through every step."""

    runs: dict[tuple[str, str], TableRun]
    seconds: float


@pytest.fixture(scope="module")
def matrix(tmp_path_factory, paimon_java, paimon_java_1_0) -> Matrix:
    """All configurations x versions through all steps, once."""
    start = time.perf_counter()
    javas = {"0.9": paimon_java, "1.0": paimon_java_1_0}
    runs: dict[tuple[str, str], TableRun] = {}
    for version in VERSIONS:
        warehouse = str(tmp_path_factory.mktemp(f"warehouse-{version}"))
        readers = ("0.9", "1.0") if version == "0.9" else ("1.0",)
        for config in CONFIGS:
            runs[(config.name, version)] = TableRun(
                config, version, warehouse, Feed(config), readers
            )
    everything = list(runs.values())
    for step in STEPS:
        for run in everything:
            if run.broken:
                run.problem(step, f"not run: {run.broken}")
        if step in ("java", "java-append"):
            java_write([r for r in everything if not r.broken], step, javas)
        else:
            for run in everything:
                if not run.broken:
                    our_step(run, step)
        if step != "health":  # health changes nothing, which it checks itself
            check_reads(everything, step, javas)
    return Matrix(runs, time.perf_counter() - start)


def case(config: Config, version: str, step: str):
    """One (table, step) test case, expected to fail where a known bug says so."""
    reason = XFAIL.get((config.name, version, step))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(
        config.name, version, step, marks=marks, id=f"{version}-{config.name}-{step}"
    )


@pytest.mark.parametrize(
    ("config", "version", "step"),
    [case(c, v, s) for c in CONFIGS for v in VERSIONS for s in STEPS],
)
def test_java_table_step(matrix: Matrix, config: str, version: str, step: str) -> None:
    """One step on one Java-written table: it ran, and every read equals the model."""
    run = matrix.runs[(config, version)]
    assert run.findings.get(step, []) == []
    if step != "health":
        assert run.compared.get(step, 0) > 0, "no read was compared with the model"

"""PaimonTable and the public signatures: every operation against the suite's independent models.

Rows are read back with pypaimon's own reader and compared with a dict-of-keys model (last write
wins, deletes remove the key); expiry must keep exactly the snapshots its retention names;
orphan removal must delete exactly the planted old files; a dry run must change no file.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import random
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange
from pypaimon.table.file_store_table import FileStoreTable

import dagster_paimon
from dagster_paimon import (
    BucketHealth,
    CompactionResult,
    ConsumerList,
    ConsumerRemovalResult,
    ConsumerResetResult,
    DatabaseNotFoundError,
    DoctorResult,
    ExpiryResult,
    HealthTotals,
    IngestResult,
    InvalidArgumentError,
    ManifestCompactionResult,
    OrphanResult,
    PaimonTable,
    PartitionExpiryResult,
    RollbackResult,
    SchemaMismatchError,
    TableHealth,
    TableNotFoundError,
    TableRef,
    TableSpec,
    WarehouseUnreachableError,
)
from dagster_paimon import errors as errors
from dagster_paimon.cli import main
from dagster_paimon.lsm.compaction import LocalExecutor
from dagster_paimon.results import DETAIL, METRIC, Reported
from dagster_paimon.table import open_catalog
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import apply_dedup, read_rows, sorted_rows
from tests.lsm.tables import DAYS, KEY, SCHEMA, cdc_batch
from tests.maintenance.appends import append_commits, append_table
from tests.maintenance.oracle import (
    age_tree,
    all_files,
    changelog_ids,
    rows_at,
    set_consumer,
    snapshot_ids,
)

IDENTIFIER = "db.cdc"


def spec(**options: str) -> TableSpec:
    """A deduplicate table whose `op` column carries each row's kind (+I, -U, +U, -D)."""
    return TableSpec("db", "cdc", SCHEMA, KEY, 2, ("dt",), {"rowkind.field": "op", **options})


def batch(commit: int) -> list[dict]:
    """Upserts and deletes over a small key space, so commits overlap."""
    return cdc_batch(random.Random(commit), commit, rows=30, keys=40)


class Modelled:
    """A PaimonTable and the rows each of its snapshots must read as, kept independently."""

    def __init__(self, table: PaimonTable):
        self.table = table
        self.rows: dict = {}
        self.at: dict[int, list[dict]] = {}

    def ingest(self, commit: int, mode: str = "append") -> IngestResult:
        """Ingest one batch through PaimonTable and apply it to the model."""
        rows = batch(commit)
        result = self.table.ingest_arrow(pa.Table.from_pylist(rows, schema=SCHEMA), mode=mode)
        apply_dedup(self.rows, [{**r, "_kind": r["op"]} for r in rows], KEY)
        self.at[result.snapshot_id] = self.expected()
        return result

    def expected(self) -> list[dict]:
        """The live rows in key order."""
        return sorted_rows(self.rows.values(), KEY)

    def read(self) -> list[dict]:
        """What pypaimon reads now."""
        return sorted_rows(read_rows(self.table.paimon), KEY)


def modelled(warehouse: str, commits: int, **options: str) -> Modelled:
    """A table created through PaimonTable after `commits` ingests."""
    table = Modelled(PaimonTable.create(warehouse, spec(**options)))
    for commit in range(commits):
        table.ingest(commit)
    time.sleep(0.01)  # every snapshot is now older than a zero retention
    return table


def files_of(table: PaimonTable) -> dict[str, float]:
    """Every file of the table with its modification time: 'changed nothing' means equal."""
    root = table.paimon.table_path
    return {p: os.stat(p).st_mtime for p in all_files(root)}


def test_open_and_create_give_the_table_and_its_layout(warehouse):
    created = PaimonTable.create(warehouse, spec())
    again = PaimonTable.create(warehouse, spec())  # idempotent when the spec matches
    opened = PaimonTable.open(warehouse, IDENTIFIER)

    for t in (created, again, opened):
        assert t.identifier == IDENTIFIER and t.warehouse == warehouse
        assert t.ref == TableRef.of(warehouse, IDENTIFIER)
        assert t.schema.names == SCHEMA.names
        assert [f.type for f in t.schema] == [f.type for f in SCHEMA]
        assert t.primary_keys == KEY and t.partition_keys == ("dt",)
        assert t.options["rowkind.field"] == "op" and t.options["bucket"] == "2"
        assert isinstance(t.paimon, FileStoreTable)
    assert "PaimonTable(TableRef(" in repr(opened)


def test_open_and_create_raise_typed_errors(warehouse, tmp_path):
    PaimonTable.create(warehouse, spec())
    with pytest.raises(TableNotFoundError):
        PaimonTable.open(warehouse, "db.nope")
    with pytest.raises(DatabaseNotFoundError):
        PaimonTable.open(warehouse, "nodb.cdc")
    with pytest.raises(WarehouseUnreachableError):
        PaimonTable.open(str(tmp_path / "missing"), IDENTIFIER)
    with pytest.raises(InvalidArgumentError):
        PaimonTable.open(warehouse, "no_dot")
    other = dataclasses.replace(spec(), bucket=3)
    with pytest.raises(SchemaMismatchError):
        PaimonTable.create(warehouse, other)


def test_ingest_then_compact_reads_as_the_model(warehouse):
    model = modelled(warehouse, 6)
    table = model.table
    assert model.read() == model.expected()
    before = table.health()
    assert before.totals.max_sorted_runs == 6  # above the compaction trigger (5)
    assert before.snapshot_id == 6

    minor = table.compact()
    assert model.read() == model.expected()
    model.ingest(4)
    full = table.compact(full=True, executor=LocalExecutor(max_workers=1))

    assert model.read() == model.expected()
    assert minor.snapshot_id == 7 and minor.metrics()["rewritten_files"] > 0
    assert full.snapshot_id == 9 and not full.dry_run and full.to_dict()["snapshot_id"] == 9
    health = table.health()
    assert health.snapshot_id == 9 and health.totals.max_sorted_runs == 1
    commit = table.paimon.snapshot_manager().get_latest_snapshot()
    assert commit.id == 9 and commit.commit_kind == "COMPACT"


def test_ingest_overwrite_replaces_the_partitions_written(warehouse):
    model = modelled(warehouse, 2)
    rows = [{"dt": DAYS[0], "id": 999, "name": "only", "amount": 1.0, "op": "+I"}]
    result = model.table.ingest_arrow(pa.Table.from_pylist(rows, schema=SCHEMA), mode="overwrite")
    kept = [r for r in model.expected() if r["dt"] != DAYS[0]]
    assert result.commit_kind == "OVERWRITE" and result.rows == 1
    assert model.read() == sorted_rows([*rows, *kept], KEY)


def test_compact_one_partition_and_dry_runs_change_nothing(warehouse):
    model = modelled(warehouse, 4)
    table = model.table
    before = files_of(table)

    dry = table.compact(full=True, partition={"dt": DAYS[0]}, dry_run=True)

    assert dry.dry_run and dry.snapshot_id is None and dry.metrics()["units"] == 2
    assert {u["partition"]["dt"] for u in dry.to_dict()["units"]} == {DAYS[0]}
    assert files_of(table) == before
    done = table.compact(full=True, partition={"dt": DAYS[0]})
    per_day = {b.partition["dt"]: b.sorted_runs for b in table.health().buckets}
    assert done.snapshot_id == 5 and per_day == {DAYS[0]: 1, DAYS[1]: 4}
    assert table.health(partition={"dt": DAYS[1]}).totals.max_sorted_runs == 4
    levels = table.levels(partition={"dt": DAYS[1]})
    assert {b.partition.spec["dt"] for b in levels.buckets} == {DAYS[1]}
    assert table.levels(snapshot_id=2).snapshot_id == 2
    assert model.read() == model.expected()


def test_expire_snapshots_keeps_exactly_what_the_retention_says(warehouse):
    model = modelled(warehouse, 6)
    table = model.table
    before = files_of(table)

    dry = table.expire_snapshots(older_than=timedelta(0), retain_min=2, dry_run=True)
    assert dry.expired_ids == (1, 2, 3, 4) and dry.dry_run
    assert files_of(table) == before

    limited = table.expire_snapshots(older_than=timedelta(0), retain_min=2, max_deletes=1)
    assert limited.expired_ids == (1,) and snapshot_ids(table.paimon) == [2, 3, 4, 5, 6]
    young = table.expire_snapshots(older_than=timedelta(hours=1), retain_min=2)
    assert young.expired_ids == () and snapshot_ids(table.paimon) == [2, 3, 4, 5, 6]
    result = table.expire_snapshots(older_than=timedelta(0), retain_min=2)

    assert result.expired_ids == (2, 3, 4) and result.to_dict()["expired"] == [2, 3, 4]
    assert result.metrics()["expired"] == 3
    assert snapshot_ids(table.paimon) == [5, 6]
    for i in (5, 6):
        assert sorted_rows(rows_at(table.paimon, i), KEY) == model.at[i]


def test_expire_snapshots_without_arguments_follows_the_table_options(warehouse):
    options = {"snapshot.num-retained.min": "3", "snapshot.time-retained": "1 ms"}
    model = modelled(warehouse, 6, **options)
    assert model.table.expire_snapshots().expired_ids == (1, 2, 3)
    assert snapshot_ids(model.table.paimon) == [4, 5, 6]
    # retain_max bounds from below even snapshots younger than the time retention
    young = model.table.expire_snapshots(older_than=timedelta(hours=1), retain_min=1, retain_max=2)
    assert young.expired_ids == (4,)
    assert model.read() == model.expected()


def test_expire_changelogs_of_a_decoupled_lifecycle(warehouse):
    model = modelled(warehouse, 5, **{"changelog.num-retained.min": "4"})
    table = model.table
    snapshots = table.expire_snapshots(older_than=timedelta(0), retain_min=2)
    assert snapshots.expired_ids == (1, 2, 3) and changelog_ids(table.paimon) == [1, 2, 3]
    before = files_of(table)

    dry = table.expire_changelogs(older_than=timedelta(0), retain_min=1, dry_run=True)
    assert dry.expired_ids == (1, 2) and files_of(table) == before
    result = table.expire_changelogs(older_than=timedelta(0), retain_min=1)

    # retain_min counts changelogs: the newest stays
    assert result.target == "changelogs" and result.expired_ids == (1, 2)
    assert changelog_ids(table.paimon) == [3] and snapshot_ids(table.paimon) == [4, 5]
    assert model.read() == model.expected()


def test_the_partitions_due_and_the_assessment_follow_the_triggers(warehouse, capsys):
    table = modelled(warehouse, 4, **{"num-sorted-run.compaction-trigger": "3"}).table
    due = table.partitions_to_compact()
    assert due.partitions == ({"dt": DAYS[0]}, {"dt": DAYS[1]}) and due.snapshot_id == 4
    assert due.metrics() == {"partitions": 2}
    assert table.partitions_to_compact(trigger=5, max_amp=1_000_000).partitions == ()
    assert table.assess().problems == ("size amplification 305% exceeds 200%",)
    table.compact(full=True, partition={"dt": DAYS[0]})
    assert table.partitions_to_compact().partitions == ({"dt": DAYS[1]},)
    code = main(["partitions-to-compact", "--warehouse", warehouse, "--table", "db.cdc"])
    assert code == 0 and f"dt={DAYS[1]}" in capsys.readouterr().out
    table.compact(full=True)
    assert table.partitions_to_compact().partitions == () and not table.assess().findings()
    main(["partitions-to-compact", "--warehouse", warehouse, "--table", "db.cdc", "--json"])
    assert json.loads(capsys.readouterr().out)["partitions"] == []


def test_compact_manifests_keeps_the_rows(warehouse):
    model = modelled(warehouse, 5)
    table = model.table
    before = files_of(table)

    dry = table.compact_manifests(full=True, dry_run=True)
    assert dry.dry_run and dry.manifests_before >= 5 and files_of(table) == before
    result = table.compact_manifests(full=True)

    assert result.snapshot_id == 6 and result.manifests_after < result.manifests_before
    assert model.read() == model.expected()
    assert sorted_rows(rows_at(table.paimon, 5), KEY) == model.at[5]


def stray(table: PaimonTable, name: str, age: timedelta) -> str:
    """A data file nothing references, `age` old."""
    path = os.path.join(table.paimon.table_path, f"dt={DAYS[0]}", "bucket-0", name)
    Path(path).write_bytes(b"x" * 10)
    then = time.time() - age.total_seconds()
    os.utime(path, (then, then))
    return path


def test_remove_orphans_deletes_old_strays_and_keeps_young_ones(warehouse):
    model = modelled(warehouse, 3)
    table = model.table
    age_tree(table.paimon.table_path)  # live files as old as the strays: only references save them
    old = stray(table, "data-old.parquet", timedelta(days=2))
    young = stray(table, "data-young.parquet", timedelta(hours=2))
    before = files_of(table)

    dry = table.remove_orphans(dry_run=True)
    assert dry.orphans == (old,) and dry.deleted == 0 and files_of(table) == before
    result = table.remove_orphans()
    assert result.orphans == (old,) and result.deleted == 1 and result.bytes == 10
    assert set(files_of(table)) == set(before) - {old}
    hour = table.remove_orphans(older_than=timedelta(hours=1))
    assert hour.orphans == (young,) and not os.path.exists(young)
    assert model.read() == model.expected()


def test_doctor_finds_and_rolls_back_an_unreadable_newest_snapshot(warehouse):
    model = modelled(warehouse, 3)
    table = model.table
    assert table.doctor().healthy and table.doctor(rollback_unreadable=True).rolled_back == ()
    newest = table.paimon.snapshot_manager().get_latest_snapshot()
    os.remove(os.path.join(table.paimon.table_path, "manifest", newest.delta_manifest_list))

    report = table.doctor()
    assert not report.healthy and report.to_dict()["unreadable_snapshots"][0]["snapshot_id"] == 3
    repaired = table.doctor(rollback_unreadable=True)

    assert repaired.rolled_back == (3,) and snapshot_ids(table.paimon) == [1, 2]
    assert sorted_rows(read_rows(table.paimon), KEY) == model.at[2]


def test_a_long_lived_object_sees_other_writers(warehouse):
    model = modelled(warehouse, 2)
    table = model.table
    rows = batch(7)
    outside = PaimonTable.open(warehouse, IDENTIFIER).paimon
    write_with_pypaimon(outside, pa.Table.from_pylist(rows, schema=SCHEMA))
    apply_dedup(model.rows, [{**r, "_kind": r["op"]} for r in rows], KEY)

    assert table.health().snapshot_id == 3 and model.read() == model.expected()
    open_catalog(warehouse).alter_table(
        IDENTIFIER, [SchemaChange.add_column("note", AtomicType("STRING"))]
    )
    assert table.schema.names == [*SCHEMA.names, "note"]
    assert table.compact(full=True).snapshot_id == 4


@pytest.mark.parametrize(
    "call",
    [
        lambda t: t.expire_snapshots(older_than=timedelta(seconds=-1)),
        lambda t: t.expire_changelogs(older_than=timedelta(seconds=-1)),
        lambda t: t.expire_snapshots(older_than=3600),
        lambda t: t.expire_snapshots(retain_min=0),
        lambda t: t.expire_snapshots(retain_min=3, retain_max=2),
        lambda t: t.expire_snapshots(max_deletes=0),
        lambda t: t.expire_partitions(),
        lambda t: t.expire_partitions(older_than=timedelta(seconds=-1)),
        lambda t: t.expire_partitions(older_than=timedelta(0), strategy="bogus"),
        lambda t: t.expire_partitions(older_than=timedelta(0), max_num=0),
        lambda t: t.remove_orphans(older_than=timedelta(0)),
        lambda t: t.remove_orphans(older_than=timedelta(days=-1)),
        lambda t: t.ingest_arrow(pa.table({"dt": ["x"]}), mode="upsert"),
        lambda t: t.ingest_arrow([{"dt": "x"}]),
        lambda t: t.compact(executor="spark"),
        lambda t: t.compact(partition={"id": "1"}),
        lambda t: t.health(partition={"nope": "1"}),
    ],
)
def test_bad_arguments_raise_invalid_argument_and_change_nothing(warehouse, call):
    table = modelled(warehouse, 2).table
    before = files_of(table)
    with pytest.raises(InvalidArgumentError):
        call(table)
    assert files_of(table) == before


def test_the_public_functions_take_no_test_hooks():
    hooks = {"now_ms", "now", "files", "snapshot_writer", "overrides", "older_than_ms"}
    for name in dagster_paimon.__all__:
        value = getattr(dagster_paimon, name)
        if inspect.isfunction(value):
            assert not hooks & set(inspect.signature(value).parameters), name
    for name, method in inspect.getmembers(PaimonTable, inspect.isfunction):
        assert not hooks & set(inspect.signature(method).parameters), name


def reported_classes() -> set[type[Reported]]:
    """Every class deriving to_dict and metrics from a field map."""
    found: set[type[Reported]] = set()
    todo = [Reported]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.add(sub)
            todo.append(sub)
    return found


RESULTS = {
    IngestResult,
    PartitionExpiryResult,
    CompactionResult,
    ExpiryResult,
    ManifestCompactionResult,
    OrphanResult,
    DoctorResult,
    TableHealth,
    HealthTotals,
    BucketHealth,
    ConsumerList,
    ConsumerRemovalResult,
    ConsumerResetResult,
    RollbackResult,
}
OLD_SPELLINGS = {
    "files_rewritten",
    "files_upgraded",
    "compaction_snapshot_id",
    "ingest_snapshot_id",
    "compaction_units",
    "compaction_seconds",
    "unreadable",
    "summary",
}


def test_each_key_has_one_spelling_across_every_result():
    assert reported_classes() >= RESULTS
    spellings: dict[frozenset[str], set[str]] = {}
    for cls in reported_classes():
        assert cls.FIELDS, cls
        assert set(cls.FIELDS.values()) <= {DETAIL, METRIC}, cls
        for key in cls.FIELDS:
            spellings.setdefault(frozenset(key.split("_")), set()).add(key)
    assert not {k for keys in spellings.values() for k in keys} & OLD_SPELLINGS
    assert all(len(keys) == 1 for keys in spellings.values()), [
        keys for keys in spellings.values() if len(keys) > 1
    ]


def metric_keys(result: Reported) -> set[str]:
    """The metric keys a field map declares, nested reports' own included."""
    keys = set()
    for key, kind in result.fields().items():
        if kind == METRIC:
            value = result.reported(key)
            keys |= metric_keys(value) if isinstance(value, Reported) else {key}
    return keys


def test_every_result_reports_its_field_map_as_json(warehouse):
    model = modelled(warehouse, 4, **{"changelog.num-retained.min": "4"})
    table = model.table
    results = [
        model.ingest(9),
        table.health(),
        table.health().totals,
        table.health().buckets[0],
        table.compact(dry_run=True),
        table.compact(full=True),
        table.expire_snapshots(older_than=timedelta(0), retain_min=2),
        table.expire_changelogs(older_than=timedelta(0), retain_min=1, dry_run=True),
        table.expire_partitions(older_than=timedelta(0), dry_run=True),
        table.compact_manifests(full=True),
        table.remove_orphans(dry_run=True),
        table.doctor(),
        table.consumers(),
        table.expire_consumers(older_than=timedelta(days=1), dry_run=True),
        table.clear_consumers(dry_run=True),
        table.rollback(snapshot_id=table.health().snapshot_id or 1, dry_run=True),
    ]
    set_consumer(table.paimon, "stream", 1)
    results.append(table.reset_consumer("stream", table.health().snapshot_id or 1))
    append_commits(append_table(warehouse, "unaware"), 1)
    appended = PaimonTable.open(warehouse, "db.events").health()
    results += [appended, appended.totals, appended.buckets[0]]
    assert {type(r) for r in results} == RESULTS
    for result in results:
        as_dict = result.to_dict()
        assert list(as_dict) == list(result.fields()), type(result)
        assert json.loads(json.dumps(as_dict)) == as_dict
        metrics = result.metrics()
        assert set(metrics) == metric_keys(result), type(result)
        assert all(v is None or type(v) in (int, float) for v in metrics.values()), metrics


def test_the_root_exports_every_error_and_result():
    error_names = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, BaseException)
        if value.__module__ == errors.__name__
    }
    assert error_names <= set(dagster_paimon.__all__)
    assert {c.__name__ for c in RESULTS} | {"PaimonTable", "TableSpec", "TableRef"} <= set(
        dagster_paimon.__all__
    )
    assert (Path(dagster_paimon.__file__).parent / "py.typed").exists()

"""One maintenance pass on real tables: tags, partitions, consumers, snapshots, in Java's order."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timedelta

import pyarrow as pa
import pytest

from dagster_paimon.errors import (
    CommitConflictError,
    InputError,
    InvalidArgumentError,
    InvalidOptionError,
    MaintenanceStepError,
    MaintenanceStepInputError,
)
from dagster_paimon.maintenance import maintain as maintain_module
from dagster_paimon.maintenance.consumers import list_consumers
from dagster_paimon.maintenance.maintain import STEPS, maintain
from dagster_paimon.maintenance.tags import list_tags
from dagster_paimon.table import TableSpec, create_table
from tests.conftest import write_with_pypaimon
from tests.hooks import context
from tests.maintenance.histories import history
from tests.maintenance.oracle import set_consumer, snapshot_ids

NOW = datetime(2024, 1, 10, 12, 0)  # local wall clock, as every step reads it
AT_NOW = context(now=NOW)
DAYS = [f"2024-01-{d:02d}" for d in range(1, 11)]
SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
    ]
)
OPTIONS = {
    "tag.automatic-creation": "process-time",
    "tag.creation-period": "daily",
    "tag.num-retained-max": "2",
    "partition.expiration-time": "3 d",
    "consumer.expiration-time": "1 d",
    "snapshot.num-retained.min": "1",
    "snapshot.time-retained": "1 h",
}


def epoch_ms(local: datetime) -> int:
    return int(local.timestamp() * 1000)


def set_time(table, snapshot_id: int, local: datetime) -> None:
    """Rewrite a snapshot's commit time, as if committed then."""
    path = os.path.join(table.table_path, "snapshot", f"snapshot-{snapshot_id}")
    with open(path) as f:
        content = json.load(f)
    content["timeMillis"] = epoch_ms(local)
    with open(path, "w") as f:
        json.dump(content, f)


def written(table, consumer_id: str, local: datetime) -> None:
    """Make a consumer file look last written at `local`."""
    path = os.path.join(table.table_path, "consumer", f"consumer-{consumer_id}")
    os.utime(path, (local.timestamp(), local.timestamp()))


def tree(table) -> list:
    return sorted(os.walk(table.table_path))


def rows(table) -> list[tuple[str, int]]:
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    found = builder.new_read().to_arrow(splits).to_pylist() if splits else []
    return sorted((r["dt"], r["id"]) for r in found)


def build(warehouse: str, options: dict[str, str]):
    """Ten daily commits (snapshot i on day i at 10:00, partition dt=day i), two consumers:
    `gone` last written two days before NOW, `live` an hour before, reading snapshot 9."""
    t = create_table(warehouse, TableSpec("db", "p", SCHEMA, ("dt", "id"), 1, ("dt",), options))
    for i, day in enumerate(DAYS, start=1):
        batch = [{"dt": day, "id": k, "v": f"{day}-{k}"} for k in range(3)]
        write_with_pypaimon(t, pa.Table.from_pylist(batch, schema=SCHEMA))
        set_time(t, i, datetime(2024, 1, i, 10, 0))
    set_consumer(t, "gone", 2)
    set_consumer(t, "live", 9)
    written(t, "gone", NOW - timedelta(days=2))
    written(t, "live", NOW - timedelta(hours=1))
    return t


@pytest.fixture
def table(warehouse):
    """The history, its options asking for every step."""
    return build(warehouse, OPTIONS)


def test_the_pass_runs_every_step_in_order(table):
    result = maintain(table, context=AT_NOW)

    assert result.skipped == {} and result.steps_run == 5 and not result.dry_run
    # 1. daily tags on the snapshot each day's end saw first; num-retained-max keeps two. Taken
    # before partition expiry: no tag holds its overwrite snapshot 11 (committed now, in 2026)
    assert {t.name: t.snapshot_id for t in list_tags(table)} == {
        "2024-01-08": 9,
        "2024-01-09": 10,
    }
    assert result.tag_creation.created == ("2023-12-31", *DAYS[:9])
    assert len(result.tag_creation.deleted) == 8
    # 2. no tag has a time retained
    assert result.tag_expiry.deleted == ()
    # 3. before NOW - 3 d = 2024-01-07 12:00: days 1..7, one OVERWRITE snapshot (11)
    assert result.partition_expiry.expired_partitions == tuple(f"dt={d}" for d in DAYS[:7])
    assert result.partition_expiry.snapshot_id == 11
    assert rows(table) == [(d, k) for d in DAYS[7:] for k in range(3)]
    # 4. `gone` was last written before NOW - 1 d
    assert result.consumer_expiry.removed == ("gone",)
    assert [c.consumer_id for c in list_consumers(table).consumers] == ["live"]
    # 5. `live` reads 9: snapshots 1..8 (older than an hour, beyond the one kept) expire
    assert snapshot_ids(table) == [9, 10, 11]
    assert result.snapshot_expiry.expired == tuple(range(1, 9))

    as_json = result.to_dict()
    assert list(as_json)[:6] == ["table", *STEPS]
    assert as_json["partition_expiry"]["expired_partitions"][0] == "dt=2024-01-01"
    metrics = result.metrics()
    assert metrics["steps_run"] == 5 and metrics["steps_skipped"] == 0
    assert metrics["tag_creation_created"] == 10
    assert metrics["partition_expiry_expired_partitions"] == 7
    assert metrics["consumer_expiry_removed"] == 1
    assert metrics["snapshot_expiry_expired"] == 8
    assert "partition_expiry:" in result.summary()


def test_dry_run_changes_nothing(table):
    before = tree(table)
    result = maintain(table, dry_run=True, context=AT_NOW)
    assert tree(table) == before
    assert result.dry_run and result.steps_run == 5
    assert result.tag_creation.dry_run and len(result.tag_creation.created) == 10
    assert result.partition_expiry.expired_partitions == tuple(f"dt={d}" for d in DAYS[:7])
    assert result.consumer_expiry.removed == ("gone",)
    assert "(dry run)" in result.summary()


def test_unconfigured_steps_are_skipped_with_reasons(warehouse):
    table = history(warehouse, 3)
    result = maintain(table)
    assert set(result.skipped) == {"tag_creation", "partition_expiry", "consumer_expiry"}
    assert "tag.automatic-creation" in result.skipped["tag_creation"]
    assert result.skipped["partition_expiry"] == "partition.expiration-time is not set"
    assert "consumer.expiration-time" in result.skipped["consumer_expiry"]
    assert result.tag_creation is None and result.partition_expiry is None
    assert result.tag_expiry is not None and result.snapshot_expiry is not None
    # the defaults keep 10 snapshots
    assert result.snapshot_expiry.expired == () and snapshot_ids(table) == [1, 2, 3]
    assert result.to_dict()["partition_expiry"] is None
    assert result.metrics()["steps_skipped"] == 3
    assert "skipped (partition.expiration-time is not set)" in result.summary()


def test_partitioned_without_expiration_time_skips_partition_expiry(warehouse):
    spec = TableSpec("db", "q", SCHEMA, ("dt", "id"), 1, ("dt",), {"tag.time-expire-enabled": "0"})
    with pytest.raises(InvalidOptionError):  # a malformed option fails before any step
        maintain(create_table(warehouse, spec))
    spec = TableSpec("db", "r", SCHEMA, ("dt", "id"), 1, ("dt",), {})
    table = create_table(warehouse, spec)
    result = maintain(table)
    assert result.skipped["partition_expiry"] == "partition.expiration-time is not set"


def test_a_failing_step_stops_the_pass(table, monkeypatch):
    def conflict(*args, **kwargs):
        raise CommitConflictError("another commit replaced the files")

    monkeypatch.setattr(maintain_module, "expire_partitions", conflict)
    with pytest.raises(MaintenanceStepError) as caught:
        maintain(table, context=AT_NOW)
    error = caught.value
    assert error.step == "partition_expiry" and not isinstance(error, InputError)
    assert "stopped at step partition_expiry" in str(error)
    assert "another commit" in str(error)
    assert isinstance(error.__cause__, CommitConflictError)
    assert list(error.completed) == ["tag_creation", "tag_expiry"]
    # the tags stay; consumer and snapshot expiry did not run
    assert len(list_tags(table)) == 2
    assert [c.consumer_id for c in list_consumers(table).consumers] == ["gone", "live"]
    assert snapshot_ids(table) == list(range(1, 11))


def test_an_input_error_of_a_step_stays_an_input_error(table, monkeypatch):
    def refuse(*args, **kwargs):
        raise InvalidOptionError("bad partition.timestamp-formatter")

    monkeypatch.setattr(maintain_module, "expire_consumers", refuse)
    with pytest.raises(MaintenanceStepInputError) as caught:
        maintain(table, context=AT_NOW)
    assert caught.value.step == "consumer_expiry" and isinstance(caught.value, InputError)
    assert snapshot_ids(table) == list(range(1, 12))  # partition expiry committed 11


def test_cli_and_paimon_table(capsys, warehouse):
    from dagster_paimon import PaimonTable
    from dagster_paimon.cli import main

    history(warehouse, 3)
    args = ["--warehouse", warehouse, "--table", "db.cdc"]
    assert main(["maintain", *args, "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dry_run"] is True and out["tag_creation"] is None
    assert out["skipped"]["consumer_expiry"] == "consumer.expiration-time is not set"
    assert main(["maintain", *args]) == 0
    assert "snapshot_expiry:" in capsys.readouterr().out
    option = ["--option", "consumer.expiration-time=1 d"]
    assert main(["maintain", *args, *option, "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["consumer_expiry"]["expiration_ms"] == 86_400_000
    assert main(["maintain", *args, "--option", "consumer.expiraton-time=1 d"]) == 2
    assert "'consumer.expiraton-time'" in capsys.readouterr().err
    assert main(["maintain", *args, "--option", "consumer.expiration-time"]) == 2
    result = PaimonTable.open(warehouse, "db.cdc").maintain(dry_run=True)
    assert result.steps_run == 2
    options = {"consumer.expiration-time": "1 d"}
    result = PaimonTable.open(warehouse, "db.cdc").maintain(options=options, dry_run=True)
    assert result.steps_run == 3 and result.consumer_expiry.removed == ()


def schema_files(table) -> dict[str, str]:
    """Every schema file of the table, by name, with its content."""
    directory = os.path.join(table.table_path, "schema")
    return {n: open(os.path.join(directory, n)).read() for n in sorted(os.listdir(directory))}


def test_overrides_run_the_steps_for_this_pass_only(warehouse):
    """A table asking for no step, given OPTIONS as overrides, is maintained exactly as the
    table whose own options they are; its schema is not changed."""
    table = build(warehouse, {"snapshot.num-retained.min": "5"})
    schemas = schema_files(table)
    result = maintain(table, options=OPTIONS, context=AT_NOW)

    assert result.skipped == {} and result.steps_run == 5
    assert {t.name: t.snapshot_id for t in list_tags(table)} == {
        "2024-01-08": 9,
        "2024-01-09": 10,
    }
    assert result.partition_expiry.expired_partitions == tuple(f"dt={d}" for d in DAYS[:7])
    assert rows(table) == [(d, k) for d in DAYS[7:] for k in range(3)]
    assert result.consumer_expiry.removed == ("gone",)
    # the override of snapshot.num-retained.min (1) beat the table's (5)
    assert snapshot_ids(table) == [9, 10, 11]
    assert schema_files(table) == schemas
    assert table.table_schema.options == {"snapshot.num-retained.min": "5", "bucket": "1"}
    # without the overrides the next pass asks for snapshot expiry and tag expiry only
    again = maintain(table)
    assert set(again.skipped) == {"tag_creation", "partition_expiry", "consumer_expiry"}


@pytest.mark.parametrize(
    ("overrides", "error", "named"),
    [
        ({"partition.expiration-tme": "1 d"}, InvalidOptionError, "'partition.expiration-tme'"),
        ({"bucket": "4"}, InvalidOptionError, "'bucket'"),
        ({"partition.expiration-time": "soon"}, InvalidOptionError, "partition.expiration-time"),
        ({"tag.creation-period": "weekly"}, InvalidOptionError, "tag.creation-period"),
        ({"snapshot.num-retained.max": "0"}, InvalidOptionError, "snapshot.num-retained.max"),
        # the table's own retain-min is 1; 3 < the override's 5
        (
            {"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "3"},
            InvalidArgumentError,
            "retain-max (3)",
        ),
        ({"consumer.expiration-time": 3}, InvalidOptionError, "strings"),
    ],
)
def test_a_bad_override_fails_before_any_step(table, overrides, error, named):
    before = tree(table)
    with pytest.raises(error, match=re.escape(named)):
        maintain(table, options=overrides, context=AT_NOW)
    assert tree(table) == before

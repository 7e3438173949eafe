"""Consumers against Paimon's Java `ConsumerManager` (0.9 and 1.0): on copies of one table,
expiry by file age removes the same consumers, a reset writes the same bytes, and each side
reads the other's consumers."""

from __future__ import annotations

import os
import shutil
import time
from datetime import timedelta

import pytest

from dagster_paimon.maintenance.consumers import (
    expire_consumers,
    list_consumers,
    reset_consumer,
)
from dagster_paimon.table import open_table
from tests.maintenance.histories import history
from tests.maintenance.oracle import set_consumer

DAY_S = 86_400
AGES = {"fresh": 0.1, "day-old": 1.2, "week-old": 7.5, "month-old": 31}


def consumers_of(table) -> dict[str, int]:
    return {c.consumer_id: c.next_snapshot for c in list_consumers(table).consumers}


def consumer_file(root: str, consumer_id: str) -> str:
    return os.path.join(root, "db.db", "cdc", "consumer", f"consumer-{consumer_id}")


@pytest.mark.parametrize("java", ["paimon_java", "paimon_java_1_0"])
@pytest.mark.parametrize("days", [1, 7])
def test_consumer_expiry_and_reset_match_java(java, days, request, tmp_path):
    java_impl = request.getfixturevalue(java)
    base = str(tmp_path / "base")
    table = history(base, 3)
    now = time.time()
    for i, (name, age) in enumerate(AGES.items()):
        set_consumer(table, name, i % 3 + 1)
        old = now - age * DAY_S
        os.utime(consumer_file(base, name), (old, old))
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    mine = open_table(ours, "db.cdc")
    assert java_impl.consumers(ours, "db", "cdc") == consumers_of(mine)

    expire_consumers(mine, expiration_time=timedelta(days=days))
    cutoff_ms = int((now - days * DAY_S) * 1000)
    after_java = java_impl.consumers(theirs, "db", "cdc", "expire", str(cutoff_ms))
    assert consumers_of(mine) == after_java
    assert len(after_java) == (1 if days == 1 else 2)

    reset_consumer(mine, "fresh", 3)
    java_impl.consumers(theirs, "db", "cdc", "reset", "fresh", "3")
    with (
        open(consumer_file(ours, "fresh"), "rb") as a,
        open(consumer_file(theirs, "fresh"), "rb") as b,
    ):
        assert a.read() == b.read()
    assert consumers_of(open_table(theirs, "db.cdc")) == java_impl.consumers(ours, "db", "cdc")

"""Bounded stress: a pypaimon writer upserts while our operations run and are killed at random.

One child process commits upserts and deletes with pypaimon's writer and acknowledges each
commit on stdout. Meanwhile the test forks our operations one after another (compaction,
full compaction, snapshot expiry, manifest compaction), killing about 30% of them with
SIGKILL, after a random delay or at a random failpoint. A CommitConflictError is an accepted
outcome; any other failure is not. Afterwards nothing may be lost or duplicated: the latest
snapshot holds exactly the acknowledged writes, every listed snapshot holds the writes that
preceded it, and after orphan removal every file in the table directory is referenced.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

from dagster_paimon import failpoints as fp
from dagster_paimon.table import open_table
from tests.crash_child import CONFLICT_EXIT, ROOT, Zygote, child_env
from tests.hooks import remove_orphans
from tests.lsm.kvmodel import apply_dedup
from tests.lsm.tables import KEY, cdc_table
from tests.tablefiles import (
    check_snapshots,
    diff_rows,
    load_snapshot,
    rows_by_key,
    snapshot_ids,
    unreferenced_files,
)

IDENTIFIER = "db.cdc"
SEED = 20240601
COMMITS = 30
OPTIONS = {"num-sorted-run.compaction-trigger": "3", "snapshot.num-retained.min": "2"}
WRITER_ARGS = {
    "identifier": IDENTIFIER,
    "commits": COMMITS,
    "seed": SEED,
    "rows": 40,
    "keys": 60,
    "pause_s": 0.3,
}
EXPIRE = {"retention": {"retain_min": 2, "time_retained_ms": 0}}
# round-robin so every kind runs many times; kills and their moments are random. Full
# compaction is the rarest, so Paimon's own pick finds sorted runs piling up in between.
OPERATIONS = [
    ("compact", {}),
    ("expire", EXPIRE),
    ("compact", {}),
    ("compact-manifests", {"full": True}),
    ("compact", {}),
    ("compact", {"full": True}),
]
KILL_SHARE = 0.3
# Half the kills come from a timer. A forked operation on this small table lives about 100 ms,
# most of it opening and planning; the timer fires at a random fraction of how long the last
# productive run of that operation took. The other half arm a random failpoint of the
# operation, so writing, committing and deleting are interrupted often too.
KILL_AT = (0.2, 1.1)
FIRST_GUESS_S = 0.1
COMMIT_STEPS = (
    fp.MANIFESTS_WRITTEN,
    fp.MANIFEST_LIST_WRITTEN,
    fp.BEFORE_SNAPSHOT,
    fp.AFTER_SNAPSHOT,
)
FAILPOINTS = {
    "compact": (fp.DATA_FILE_WRITTEN, f"{fp.DATA_FILE_WRITTEN}@2", *COMMIT_STEPS),
    "compact-manifests": COMMIT_STEPS,
    "expire": (
        fp.FILE_DELETED,
        f"{fp.FILE_DELETED}@3",
        fp.DATA_FILES_EXPIRED,
        fp.METADATA_EXPIRED,
        fp.RECORDS_EXPIRED,
    ),
}
PAUSE_S = (0.0, 0.1)  # between operations, so the writer's commits pile up for compaction
BUDGET_S = 75


class Writer:
    """The pypaimon writer child, with its acknowledged commits collected as they come."""

    def __init__(self, warehouse: str):
        self.acks: list[dict] = []
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.crash_child",
                "writer",
                warehouse,
                json.dumps(WRITER_ARGS),
            ],
            cwd=ROOT,
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._stderr: list[str] = []
        self._threads = [
            threading.Thread(target=self._read_acks, daemon=True),
            threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_acks(self) -> None:
        for line in self.proc.stdout:
            record = json.loads(line)
            if "commit" in record:
                self.acks.append(record)

    def running(self) -> bool:
        return self.proc.poll() is None

    def finish(self, timeout: float) -> int:
        code = self.proc.wait(timeout)
        for t in self._threads:
            t.join(10)
        return code

    def stop(self) -> None:
        if self.running():
            self.proc.kill()
            self.proc.wait()

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)[-6000:]


def prefix_models(acks: list[dict]) -> list[dict]:
    """models[n]: the table's rows after the first n acknowledged commits."""
    models = [{}]
    for ack in acks:
        model = dict(models[-1])
        apply_dedup(model, [{**r, "_kind": r["op"]} for r in ack["rows"]], KEY)
        models.append(model)
    return models


def commits_visible(table, acks: list[dict]) -> dict[int, int]:
    """For each listed snapshot: how many acknowledged commits it includes.

    A commit whose APPEND snapshot is no longer listed was expired, so it precedes every
    listed snapshot; the writer's commits must land in the order they were acknowledged.
    """
    listed = {s: load_snapshot(table, s) for s in snapshot_ids(table)}
    appends = {snap.commit_user: s for s, snap in listed.items() if snap.commit_kind == "APPEND"}
    users = [a["user"] for a in acks]
    unknown = set(appends) - set(users)
    assert not unknown, (
        f"APPEND snapshots nobody acknowledged: {sorted(appends[u] for u in unknown)}"
    )
    landed = [appends.get(u) for u in users]
    expired = 0
    while expired < len(landed) and landed[expired] is None:
        expired += 1
    rest = landed[expired:]
    assert None not in rest, f"an acknowledged commit is missing: {landed}"
    assert rest == sorted(rest), f"commits landed out of order: {landed}"
    assert not rest or min(listed) <= rest[0], "an expired commit would follow a listed one"
    return {s: expired + sum(1 for x in rest if x <= s) for s in listed}


def run_loop(zygote: Zygote, writer: Writer, warehouse: str, rng: random.Random) -> Counter:
    """Our operations, one at a time, until the writer is done; some are killed."""
    outcomes: Counter = Counter()
    deadline = time.monotonic() + BUDGET_S
    zygote.ready()
    while writer.running() and not writer.acks:  # start once there is something to maintain
        assert time.monotonic() < deadline, "the writer never committed"
        time.sleep(0.05)
    turn = 0
    took: dict[str, float] = {}
    while writer.running():
        assert time.monotonic() < deadline, f"stress loop over budget: {dict(outcomes)}"
        op, args = OPERATIONS[turn % len(OPERATIONS)]
        name = f"{op}{'-full' if args.get('full') and op == 'compact' else ''}"
        turn += 1
        roll = rng.random()
        timer = failpoint = None
        if roll < KILL_SHARE / 2:
            timer = rng.uniform(*KILL_AT) * took.get(name, FIRST_GUESS_S)
        elif roll < KILL_SHARE:
            failpoint = rng.choice(FAILPOINTS[op])
        started = time.monotonic()
        child = zygote.start(op, warehouse, {"identifier": IDENTIFIER, **args}, failpoint=failpoint)
        result = zygote.wait(child, timer if timer is not None else 120)
        if result is None:
            result = zygote.kill(child)
            if timer is None:
                pytest.fail(f"{name} hung\n{result.describe()}")
        if result.killed and timer is not None:
            outcomes[f"{name}:killed-by-timer"] += 1
        elif result.killed and failpoint is not None:
            outcomes[f"{name}:killed-at-failpoint"] += 1
        elif result.returncode == 0:
            report = result.result or {}
            worked = report.get("snapshot_id") is not None or report.get("expired")
            if worked:
                took[name] = time.monotonic() - started
            outcomes[f"{name}:{'ok' if worked else 'nothing-to-do'}"] += 1
        elif result.returncode == CONFLICT_EXIT:
            outcomes[f"{name}:conflict"] += 1
        else:
            writer.stop()
            pytest.fail(f"{name} failed during the stress loop\n{result.describe()}")
        time.sleep(rng.uniform(*PAUSE_S))
    return outcomes


@pytest.mark.slow
def test_writer_with_killed_maintenance(warehouse):
    cdc_table(warehouse, bucket=2, **OPTIONS)
    rng = random.Random(SEED)
    zygote = Zygote()
    writer = Writer(warehouse)
    try:
        outcomes = run_loop(zygote, writer, warehouse, rng)
        code = writer.finish(60)
        assert code == 0, f"the pypaimon writer failed ({code})\n{writer.stderr}"
        assert len(writer.acks) == COMMITS
        # finish any expiry a kill interrupted, so every listed snapshot is a retained one
        settle = zygote.run("expire", warehouse, {"identifier": IDENTIFIER, **EXPIRE})
        assert settle.returncode == 0, settle.describe()
    finally:
        writer.stop()
        zygote.close()
    print(f"stress outcomes: {dict(sorted(outcomes.items()))}")
    assert sum(v for k, v in outcomes.items() if k.endswith(":ok")) >= len(OPERATIONS)
    assert sum(v for k, v in outcomes.items() if ":killed" in k) > 0, "nothing was killed"

    models = prefix_models(writer.acks)

    def check_contents() -> None:
        table = open_table(warehouse, IDENTIFIER)
        problem = diff_rows(rows_by_key(table, KEY), models[-1])
        assert not problem, f"latest snapshot != acknowledged writes: {problem}"
        visible = commits_visible(table, writer.acks)
        checked = check_snapshots(table, KEY, lambda s: models[visible[s.id]])
        assert checked == snapshot_ids(table)

    check_contents()
    table = open_table(warehouse, IDENTIFIER)
    print(f"unreferenced files before orphan removal: {len(unreferenced_files(table))}")
    remove_orphans(table, older_than_ms=1, now_ms=int(time.time() * 1000) + 3_600_000)
    assert unreferenced_files(open_table(warehouse, IDENTIFIER)) == set()
    check_contents()

"""Run one table operation in a child process that a failpoint (or the parent) may kill.

    python -m tests.crash_child <op> <warehouse> <json args>

ops: compact, ingest, overwrite, expire, compact-manifests, expire-partitions, remove-orphans,
delete-tag, create-tag, auto-tags (with `options` laid over the table's), maintain (the pass,
with `options` overrides), expire-consumers, clear-consumers, reset-consumer, rollback,
rescale, `writer` (a pypaimon upsert loop printing one JSON line per
acknowledged commit, for the stress test),
`racing-ingest` (an ingest during which pypaimon commits `rival` rows, after the ingest read its
base snapshot and wrote its files) and `ingests` (several ingests in a row, started when the
parent creates `go` in the `gate` directory).
The op's result is printed as one JSON line; exit status 0 on success, CONFLICT_EXIT when
the commit lost to another (CommitConflictError), FAILED_EXIT with a traceback otherwise.
The parent arms a failpoint with DAGSTER_PAIMON_FAILPOINT in the child's environment.

Importing dagster_paimon costs seconds of CPU (pypaimon pulls in pandas and polars), so tests
that run dozens of children use a Zygote: `python -m tests.crash_child zygote` imports
everything once and forks one fresh child per request; each child runs the same `main` as
the command line, with its own environment and output files, and dies as it would alone.

CRASH_CHILD_BREAK_COMMIT=1 breaks the commit order inside the child (never the package):
the snapshot file is created before the manifests and manifest lists it names exist, which
the crash matrix must catch.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFLICT_EXIT = 3
FAILED_EXIT = 1
BREAK_COMMIT_ENV = "CRASH_CHILD_BREAK_COMMIT"
FAILPOINT_ENV = "DAGSTER_PAIMON_FAILPOINT"
IDENTIFIER = "db.orders"
OPS = (
    "compact",
    "ingest",
    "overwrite",
    "expire",
    "compact-manifests",
    "expire-partitions",
    "remove-orphans",
    "delete-tag",
    "create-tag",
    "auto-tags",
    "maintain",
    "expire-consumers",
    "clear-consumers",
    "reset-consumer",
    "rollback",
    "rescale",
    "writer",
    "racing-ingest",
    "ingests",
)
GATE_TIMEOUT_S = 120
HOUR_MS = 3_600_000


def _load_ops() -> None:
    """Import every module an op uses (the zygote does this once, before forking)."""
    import tests.conftest
    import tests.ingest.races
    import tests.lsm.tables  # noqa: F401


def break_commit_order() -> None:
    """Create snapshot-N before the manifests it names: the bug the crash matrix must catch."""
    from pypaimon.common.json_util import JSON
    from pypaimon.snapshot.snapshot import Snapshot

    from dagster_paimon.commit.producer import SnapshotProducer

    original = SnapshotProducer._prepare

    def prepare_after_snapshot(self, latest, *args, **kwargs):
        unique = uuid.uuid4()
        early = Snapshot(
            version=3,
            id=latest.id + 1 if latest else 1,
            schema_id=self.table.table_schema.id,
            base_manifest_list=f"manifest-list-{unique}-0",
            delta_manifest_list=f"manifest-list-{unique}-1",
            total_record_count=(latest.total_record_count or 0) if latest else 0,
            delta_record_count=0,
            commit_user=self.commit_user,
            commit_identifier=self.identifier,
            commit_kind=self.kind,
            time_millis=int(time.time() * 1000),
        )
        self.snapshot_writer(
            self.table.file_io,
            self.table.snapshot_manager().get_snapshot_path(early.id),
            JSON.to_json(early, indent=2),
        )
        return original(self, latest, *args, **kwargs)

    SnapshotProducer._prepare = prepare_after_snapshot


def _arrow_rows(rows: list[dict]):
    """The JSON rows as an Arrow table (strings and int64, as inferred)."""
    import pyarrow as pa

    return pa.Table.from_pylist(rows)


def _writer(warehouse: str, args: dict) -> dict:
    """Upsert loop with pypaimon's batch writer; one JSON line per acknowledged commit."""
    import random

    import pyarrow as pa

    from dagster_paimon.table import open_table
    from tests.lsm.tables import SCHEMA, cdc_batch

    table = open_table(warehouse, args["identifier"])
    rng = random.Random(args.get("seed", 0))
    for commit in range(args["commits"]):
        rows = cdc_batch(rng, commit, rows=args.get("rows", 40), keys=args.get("keys", 60))
        builder = table.new_batch_write_builder()
        writer, committer = builder.new_write(), builder.new_commit()
        try:
            writer.write_arrow(pa.Table.from_pylist(rows, schema=SCHEMA))
            committer.commit(writer.prepare_commit())
        finally:
            writer.close()
            committer.close()
        line = {"commit": commit, "user": builder.commit_user, "rows": rows}
        print(json.dumps(line), flush=True)
        time.sleep(args.get("pause_s", 0.0))
    return {"commits": args["commits"]}


def _ingests(table, args: dict) -> dict:
    """Signal readiness, wait for the gate, then ingest each batch; the snapshots they landed."""
    from dagster_paimon.ingest.arrow import ingest_arrow

    gate = Path(args["gate"])
    (gate / f"ready-{args['name']}").touch()
    deadline = time.monotonic() + GATE_TIMEOUT_S
    while not (gate / "go").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the gate {gate} never opened")
        time.sleep(0.002)
    return {"snapshots": [ingest_arrow(table, _arrow_rows(b)).snapshot_id for b in args["batches"]]}


def _racing_ingest(table, args: dict) -> dict:
    """Ingest `rows`; pypaimon commits `rival` into the same buckets before the ingest commits."""
    import pyarrow as pa

    from dagster_paimon.ingest.arrow import ingest_arrow
    from dagster_paimon.io.kv import value_schema
    from tests.conftest import write_with_pypaimon
    from tests.ingest.races import at_first_flush

    rival = pa.Table.from_pylist(args["rival"], schema=value_schema(table.table_schema))
    with at_first_flush(lambda: write_with_pypaimon(table, rival)):
        result = ingest_arrow(table, _arrow_rows(args["rows"]))
    return {"snapshot_id": result.snapshot_id}


def _consumers(op: str, table, args: dict) -> dict:
    """One consumer operation: expire by age, clear by pattern, reset one."""
    from datetime import timedelta

    from dagster_paimon.maintenance import consumers

    if op == "reset-consumer":
        reset = consumers.reset_consumer(table, args["consumer_id"], int(args["next_snapshot"]))
        return {"next_snapshot": reset.next_snapshot}
    if op == "expire-consumers":
        expiration = timedelta(hours=args["expiration_hours"])
        result = consumers.expire_consumers(table, expiration_time=expiration)
    else:
        result = consumers.clear_consumers(table, including=args["including"])
    return {"removed": list(result.removed), "kept": list(result.kept)}


def run_op(op: str, warehouse: str, args: dict) -> dict:
    """Run one operation in this process and return what it reports, JSON-ready."""
    from dagster_paimon.table import TableRef, open_table

    if op == "writer":
        return _writer(warehouse, args)
    identifier = args.get("identifier", IDENTIFIER)
    table = open_table(warehouse, identifier)
    if op == "compact":
        from dagster_paimon.kinds import compact_open_table

        ref = TableRef.of(warehouse, identifier)
        result = compact_open_table(table, ref, full=bool(args.get("full", False)))
        return {"snapshot_id": result.snapshot_id}
    if op == "rescale":
        from dagster_paimon.lsm.compaction import rescale_open_table

        ref = TableRef.of(warehouse, identifier)
        bucket_num, partition = int(args["bucket_num"]), args.get("partition")
        partitions = [partition] if partition else None
        result = rescale_open_table(table, ref, bucket_num=bucket_num, partitions=partitions)
        return {"snapshot_id": result.snapshot_id}
    if op in ("ingest", "overwrite"):
        from dagster_paimon.ingest.arrow import ingest_arrow

        mode = "append" if op == "ingest" else "overwrite"
        result = ingest_arrow(table, _arrow_rows(args["rows"]), mode=mode)
        return {"snapshot_id": result.snapshot_id}
    if op == "racing-ingest":
        return _racing_ingest(table, args)
    if op == "ingests":
        return _ingests(table, args)
    if op == "expire":
        from dagster_paimon.maintenance.options import RetentionOverrides
        from tests.hooks import expire_snapshots

        overrides = RetentionOverrides(**args.get("retention", {}))
        result = expire_snapshots(table, overrides=overrides)
        return {"expired": list(result.expired_ids), "deleted_files": result.deleted_files}
    if op == "compact-manifests":
        from tests.hooks import compact_manifests

        result = compact_manifests(table, full=bool(args.get("full", True)))
        return {"snapshot_id": result.snapshot_id}
    if op == "expire-partitions":
        from datetime import datetime, timedelta

        from tests.hooks import expire_partitions

        result = expire_partitions(
            table,
            expiration_time=timedelta(hours=args["expiration_hours"]),
            now=datetime.fromisoformat(args["now"]),
        )
        return {"expired": list(result.expired_partitions), "snapshot_id": result.snapshot_id}
    if op == "remove-orphans":
        from tests.hooks import remove_orphans

        now_ms = int(time.time() * 1000) + HOUR_MS
        result = remove_orphans(table, older_than_ms=1, now_ms=now_ms)
        return {"orphans": sorted(result.orphans)}
    if op == "delete-tag":
        from dagster_paimon.maintenance.tags import delete_tag

        result = delete_tag(table, args["name"])
        return {"deleted": list(result.deleted), "data_files": result.deleted_data_files}
    if op == "create-tag":
        from dagster_paimon.maintenance.tags import create_tag

        result = create_tag(table, args["name"], snapshot_id=args.get("snapshot_id"))
        return {"created": list(result.created)}
    if op == "auto-tags":
        from dagster_paimon.maintenance.tags import create_automatic_tags

        result = create_automatic_tags(table.copy_without_time_travel(args["options"]))
        return {"created": list(result.created), "deleted": list(result.deleted)}
    if op == "maintain":
        from dagster_paimon.maintenance.maintain import maintain

        return maintain(table, options=args["options"]).to_dict()
    if op in ("expire-consumers", "clear-consumers", "reset-consumer"):
        return _consumers(op, table, args)
    if op == "rollback":
        from dagster_paimon.maintenance.rollback import rollback_to

        result = rollback_to(table, snapshot_id=int(args["snapshot_id"]))
        return {"removed": list(result.removed_snapshots)}
    raise ValueError(f"unknown op {op!r}; known: {', '.join(OPS)}")


def main(argv: list[str]) -> int:
    """The command line: run the op, print its JSON result, exit with its status."""
    if len(argv) != 3 or argv[0] not in OPS:
        print(f"usage: python -m tests.crash_child {{{'|'.join(OPS)}}} WAREHOUSE JSON_ARGS")
        return 2
    op, warehouse, args = argv[0], argv[1], json.loads(argv[2])
    from dagster_paimon.errors import CommitConflictError

    if os.environ.get(BREAK_COMMIT_ENV) == "1":
        break_commit_order()
    try:
        result = run_op(op, warehouse, args)
    except CommitConflictError as e:
        print(json.dumps({"conflict": str(e)}), flush=True)
        return CONFLICT_EXIT
    except Exception:
        traceback.print_exc()
        return FAILED_EXIT
    print(json.dumps(result), flush=True)
    return 0


@dataclass
class ChildResult:
    """How a child ended: its return code (negative: the signal), its output and result."""

    op: str
    returncode: int
    stdout: str
    stderr: str

    @property
    def killed(self) -> bool:
        """Ended by SIGKILL (a failpoint, or the parent)."""
        return self.returncode == -signal.SIGKILL

    @property
    def result(self) -> dict | None:
        """The JSON the op printed last, if it got that far."""
        lines = [line for line in self.stdout.splitlines() if line.startswith("{")]
        return json.loads(lines[-1]) if lines else None

    def describe(self) -> str:
        """For assertion messages."""
        return (
            f"{self.op} exited {self.returncode}\n--- stdout\n{self.stdout[-2000:]}"
            f"\n--- stderr\n{self.stderr[-6000:]}"
        )


def child_env(failpoint: str | None = None, extra: dict[str, str] | None = None) -> dict:
    """The test's environment with exactly this failpoint armed (or none)."""
    env = {k: v for k, v in os.environ.items() if k not in (FAILPOINT_ENV, BREAK_COMMIT_ENV)}
    if failpoint:
        env[FAILPOINT_ENV] = failpoint
    env.update(extra or {})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run_child(
    op: str,
    warehouse: str,
    args: dict,
    *,
    failpoint: str | None = None,
    extra_env: dict[str, str] | None = None,
    timeout: float = 120,
) -> ChildResult:
    """`python -m tests.crash_child ...` as a plain subprocess (pays the import)."""
    proc = subprocess.run(
        [sys.executable, "-m", "tests.crash_child", op, warehouse, json.dumps(args)],
        cwd=ROOT,
        env=child_env(failpoint, extra_env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return ChildResult(op, proc.returncode, proc.stdout, proc.stderr)


# ---------------------------------------------------------------- zygote


def _zygote_child(request: dict) -> None:
    """In the forked child: own environment and output files, run main, never return."""
    code = FAILED_EXIT
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(out, fd)
            os.close(out)
        os.environ.pop(FAILPOINT_ENV, None)
        os.environ.pop(BREAK_COMMIT_ENV, None)
        os.environ.update(request["env"])
        code = main([request["op"], request["warehouse"], json.dumps(request["args"])])
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def zygote_main() -> int:
    """Import once, then fork a child per request line; report its pid, then its status.

    Replies go to a private copy of stdout; fd 1 itself points at stderr, so nothing an
    import prints can corrupt the protocol.
    """
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    _load_ops()
    print(json.dumps({"ready": os.getpid()}), file=proto, flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            proto.close()
            _zygote_child(request)
        print(json.dumps({"pid": pid}), file=proto, flush=True)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        print(json.dumps({"pid": pid, "returncode": code}), file=proto, flush=True)
    return 0


@dataclass
class Running:
    """A child the zygote forked and has not reported on yet."""

    pid: int
    op: str
    stdout: Path
    stderr: Path


class Zygote:
    """Parent side: a pre-imported process that forks fresh op children on request."""

    def __init__(self, startup_timeout: float = 180):
        self._dir = tempfile.TemporaryDirectory(prefix="crash-child-")
        self._count = 0
        self._buffer = b""
        self._startup_timeout = startup_timeout
        self._ready = False
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.crash_child", "zygote"],
            cwd=ROOT,
            env=child_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def ready(self) -> None:
        """Wait until the zygote has imported everything (it starts in the background)."""
        if not self._ready:
            reply = self._reply(self._startup_timeout)
            if reply is None or "ready" not in reply:
                raise RuntimeError(f"the zygote did not start: {reply}")
            self._ready = True

    def _reply(self, timeout: float | None) -> dict | None:
        """The zygote's next line, or None if none came within `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([fd], [], [], left)
            if not readable:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"the zygote died (exit {self.proc.wait()})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def start(
        self,
        op: str,
        warehouse: str,
        args: dict,
        *,
        failpoint: str | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> Running:
        """Fork a child running `op`; returns at once."""
        self.ready()
        self._count += 1
        base = Path(self._dir.name) / f"{self._count}-{op}"
        env = {FAILPOINT_ENV: failpoint} if failpoint else {}
        env.update(extra_env or {})
        request = {
            "op": op,
            "warehouse": warehouse,
            "args": args,
            "env": env,
            "stdout": f"{base}.out",
            "stderr": f"{base}.err",
        }
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        reply = self._reply(60)
        if reply is None or "pid" not in reply:
            raise RuntimeError(f"the zygote did not fork: {reply}")
        return Running(reply["pid"], op, Path(request["stdout"]), Path(request["stderr"]))

    def wait(self, child: Running, timeout: float | None = None) -> ChildResult | None:
        """The child's result, or None if it is still running after `timeout` seconds."""
        reply = self._reply(timeout)
        if reply is None:
            return None
        assert reply.get("pid") == child.pid, reply
        return ChildResult(
            child.op,
            reply["returncode"],
            child.stdout.read_text() if child.stdout.exists() else "",
            child.stderr.read_text() if child.stderr.exists() else "",
        )

    def kill(self, child: Running) -> ChildResult:
        """SIGKILL the child (if it still runs) and collect it."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGKILL)
        result = self.wait(child, 60)
        assert result is not None, f"{child.op} child {child.pid} did not die"
        return result

    def run(
        self,
        op: str,
        warehouse: str,
        args: dict,
        *,
        failpoint: str | None = None,
        extra_env: dict[str, str] | None = None,
        timeout: float = 120,
    ) -> ChildResult:
        """Fork, wait; a child still running after `timeout` is killed and reported as hung."""
        child = self.start(op, warehouse, args, failpoint=failpoint, extra_env=extra_env)
        result = self.wait(child, timeout)
        if result is None:
            result = self.kill(child)
            raise AssertionError(f"{op} hung for {timeout} s and was killed\n{result.describe()}")
        return result

    def close(self) -> None:
        """Stop the zygote and remove the children's output files."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self._dir.cleanup()


if __name__ == "__main__":
    if sys.argv[1:] == ["zygote"]:
        sys.exit(zygote_main())
    sys.exit(main(sys.argv[1:]))

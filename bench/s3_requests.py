"""S3 requests per operation, ours beside the computed minimum, and what they cost a month.

Run: uv run python bench/s3_requests.py [--ingests 35] [--rows 10000]

The table of issue 39: primary key (dt, id), partitioned by dt (2 partitions), 2 buckets,
`--rows` upserted rows per ingest. Every request of ours passes through the counting proxy
(tests/faultproxy.py, no faults) in front of moto (tests/s3server.py); the table is built and
copied around it. Measured: the 2nd and the last ingest commit (PaimonTable.ingest_arrow on an
open table), and after the 6th and the last ingest, on a fresh server-side copy each: compact
(minor), compact --full, expire-snapshots (keeping 1), compact-manifests and remove-orphans.
Each row prints our requests by kind beside the minimum (how it is counted: `minimum()`), and
the monthly cost at AWS list prices of one ingest a minute with hourly compaction, expiry and
manifest compaction.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dagster_paimon.paimon_table import PaimonTable
from tests.conftest import orders_batch, orders_spec
from tests.faultproxy import FaultProxy, fault_proxy
from tests.s3server import S3Server, moto_server

SPEC = orders_spec(2)
PARTITIONS = 2
# AWS S3 Standard list prices, us-east-1: PUT, COPY, POST, LIST; GET, HEAD and the rest
PUT_PRICE = 0.005 / 1000
GET_PRICE = 0.0004 / 1000
# a month of the schedule in the issue: one ingest a minute, maintenance hourly
INGESTS_A_MONTH = 60 * 24 * 30
HOURLY_A_MONTH = 24 * 30
MAINTENANCE = ("compact", "expire-snapshots", "compact-manifests")
COPY_WORKERS = 8


def cost(counts: Counter[str]) -> float:
    """Dollars for these requests at list prices: PUT, POST and LIST-priced GETs cost more."""
    return sum(
        n * (PUT_PRICE if m in ("PUT", "POST", "LIST") else GET_PRICE) for m, n in counts.items()
    )


def priced(entries: list[tuple[str, str, str, str | None]]) -> Counter[str]:
    """Methods with LISTs apart: a LIST is a GET on the wire, priced as a PUT."""
    return Counter("LIST" if klass == "list" else method for klass, method, _, _ in entries)


@dataclass
class Measured:
    """One operation's requests through the proxy and the fewest it could have made."""

    name: str
    requests: Counter[str]
    minimum: Counter[str]

    @property
    def total(self) -> int:
        """Requests in all."""
        return sum(self.requests.values())

    @property
    def least(self) -> int:
        """The minimum in all."""
        return sum(self.minimum.values())


def measure(
    proxy: FaultProxy, name: str, minimum: Counter[str], action: Callable[[], object]
) -> Measured:
    """The requests `action` made through the proxy."""
    before = len(proxy.log.entries)
    action()
    return Measured(name, priced(proxy.log.entries[before:]), minimum)


@dataclass(frozen=True)
class Shape:
    """What the minimum of an operation depends on: the latest snapshot's files."""

    data_files: int
    manifests: int
    snapshots: int


def shape(table: PaimonTable) -> Shape:
    """The latest snapshot's live data files and manifests, and the snapshots kept."""
    paimon = table.paimon
    manager = paimon.snapshot_manager()
    latest = manager.get_latest_snapshot()
    if latest is None:
        return Shape(0, 0, 0)
    scan = paimon.new_read_builder().new_scan()
    manifests = scan.file_scanner.manifest_list_manager.read_all(latest)
    data_files = sum(len(s.files) for s in scan.plan().splits())
    earliest = manager.try_get_earliest_snapshot()
    return Shape(data_files, len(manifests), latest.id - earliest.id + 1)


def need(
    puts: int = 0, gets: int = 0, heads: int = 0, lists: int = 0, posts: int = 0
) -> Counter[str]:
    """A minimum by kind."""
    return (
        Counter({"PUT": puts, "GET": gets, "HEAD": heads, "LIST": lists, "POST": posts}) + Counter()
    )


BUCKETS = PARTITIONS * SPEC.bucket
# the latest snapshot by Paimon's hint protocol: GET LATEST, the next id absent (one HEAD), GET
# the snapshot
FIND_LATEST = need(gets=2, heads=1)
# a commit: GET the previous base and delta manifest lists; PUT the new files' manifest, the
# base and delta lists, the snapshot (one conditional PUT) and the LATEST hint
COMMIT = need(gets=2, puts=5)
# Paimon's manifest.merge-min-count: fewer manifests are left as they are
MERGE_MIN_COUNT = 30


def minimum(operation: str, s: Shape) -> Counter[str]:
    """The fewest requests the operation can make on a table of shape `s`.

    ingest: find the latest, one PUT per data file (one per bucket written), commit.
    compact (minor, or --full): find the latest, GET its lists and every manifest, GET every
    data file (these level-0 runs all take part, minor or full), PUT one file per bucket,
    commit (whose list reads are the ones already made).
    expire-snapshots keeping one: GET EARLIEST, find the latest, GET each expired snapshot, the
    kept one's lists and manifests (to know what stays), one DeleteObjects, PUT EARLIEST.
    compact-manifests: find the latest, GET its lists and every manifest; past Paimon's
    manifest.merge-min-count (30) PUT one merged manifest and commit.
    remove-orphans: LIST the snapshot, manifest and schema directories and each partition and
    bucket directory, find the latest, GET its lists and every manifest.
    """
    if operation == "ingest":
        return FIND_LATEST + need(puts=BUCKETS) + COMMIT
    reads = FIND_LATEST + need(gets=2 + s.manifests)
    if operation in ("compact", "compact --full"):
        return reads + need(gets=s.data_files, puts=BUCKETS) + need(puts=5)
    if operation == "expire-snapshots":
        return reads + need(gets=1 + s.snapshots - 1, posts=1, puts=1)
    if operation == "compact-manifests":
        return reads + (need(puts=1) + need(puts=5) if s.manifests >= MERGE_MIN_COUNT else need())
    if operation == "remove-orphans":
        return reads + need(lists=3 + PARTITIONS * (1 + SPEC.bucket))
    raise ValueError(operation)


def copy_bucket(server: S3Server, source: str) -> str:
    """A fresh bucket with a server-side copy of `source`, made around the proxy."""
    bucket = server.create_bucket("copy")
    client = server.client()

    def one(key: str) -> None:
        client.copy_object(Bucket=bucket, Key=key, CopySource={"Bucket": source, "Key": key})

    with ThreadPoolExecutor(COPY_WORKERS) as pool:
        list(pool.map(one, server.keys(source)))
    return bucket


OPERATIONS: dict[str, Callable[[PaimonTable], object]] = {
    "compact": lambda t: t.compact(),
    "compact --full": lambda t: t.compact(full=True),
    "expire-snapshots": lambda t: t.expire_snapshots(
        older_than=timedelta(0), retain_min=1, retain_max=1
    ),
    "compact-manifests": lambda t: t.compact_manifests(),
    "remove-orphans": lambda t: t.remove_orphans(),
}


def maintenance(
    server: S3Server, proxy: FaultProxy, bucket: str, label: str
) -> dict[str, Measured]:
    """Each maintenance operation on its own copy of the table, through the proxy."""
    results = {}
    for name, operation in OPERATIONS.items():
        table = open_through(server, proxy, copy_bucket(server, bucket))
        least = minimum(name, shape(table))
        results[name] = measure(
            proxy, f"{name} {label}", least, functools.partial(operation, table)
        )
    return results


def open_through(server: S3Server, proxy: FaultProxy, bucket: str) -> PaimonTable:
    """The table in `bucket`, every request through the proxy."""
    return PaimonTable.open(f"s3://{bucket}/wh", SPEC.identifier, open_options(server, proxy))


def monthly(ingest: Counter[str], hourly: list[Counter[str]]) -> float:
    """A month of the schedule: an ingest every minute, each maintenance operation hourly."""
    return cost(ingest) * INGESTS_A_MONTH + sum(map(cost, hourly)) * HOURLY_A_MONTH


def report(rows: list[Measured]) -> None:
    """Our requests by kind beside the minimum, one operation a row."""
    print(f"{'operation':<32} {'ours':>6} {'minimum':>8} {'ratio':>6}  ours by kind")
    for m in rows:
        by_kind = ", ".join(f"{n} {k}" for k, n in sorted(m.requests.items()))
        ratio = m.total / m.least
        print(f"{m.name:<32} {m.total:>6} {m.least:>8} {ratio:>6.1f}  {by_kind}")


def schedule(label: str, ingest: Measured, hourly: dict[str, Measured]) -> None:
    """The month's cost of the schedule at one point of the table's history."""
    kept = [hourly[name] for name in MAINTENANCE]
    ours = monthly(ingest.requests, [m.requests for m in kept])
    least = monthly(ingest.minimum, [m.minimum for m in kept])
    print(
        f"a month at {label} (an ingest a minute; hourly {', '.join(MAINTENANCE)}): "
        f"ours ${ours:.2f}, minimum ${least:.2f}"
    )


def main() -> None:
    """Build the table through the proxy, measure, print."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--ingests", type=int, default=35)
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    with moto_server() as server, fault_proxy(server.endpoint, lifetime_s=3600) as proxy:
        bucket = server.create_bucket("requests")
        table = PaimonTable.create(f"s3://{bucket}/wh", SPEC, open_options(server, proxy))
        ingests: dict[int, Measured] = {}
        hourly: dict[int, dict[str, Measured]] = {}
        for commit in range(1, args.ingests + 1):
            data = orders_batch(commit, args.rows)
            least = minimum("ingest", shape(table))
            ingests[commit] = measure(
                proxy, f"ingest #{commit}", least, functools.partial(table.ingest_arrow, data)
            )
            if commit in (6, args.ingests):
                hourly[commit] = maintenance(server, proxy, bucket, f"after {commit}")
        second, last = ingests[2], ingests[args.ingests]
        report([second, *hourly[6].values(), last, *hourly[args.ingests].values()])
        print(f"ingest #{args.ingests} / ingest #2: {last.total / second.total:.2f}")
        schedule("6 commits", second, hourly[6])
        schedule(f"{args.ingests} commits", last, hourly[args.ingests])


def open_options(server: S3Server, proxy: FaultProxy) -> dict[str, str]:
    """Catalog options that reach moto through the proxy."""
    return {**server.catalog_options(), "fs.s3.endpoint": proxy.endpoint}


if __name__ == "__main__":
    main()

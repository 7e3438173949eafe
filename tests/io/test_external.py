"""Where new data files go under `data-file.external-paths`, checked against Java's own rules.

The oracle (tests/io/java/ExternalPathOracle.java) builds each path with the libraries Paimon's
Java implementation builds it from: Guava's murmur3_32 for EntropyInjectExternalPathProvider's
hash directories and Hadoop's Path, whose parsing and printing Paimon's fs/Path copies, for
`new Path(new Path(root, relativeBucketPath), fileName)` (RoundRobinExternalPathProvider,
WeightedExternalPathProvider) and `new Path(root, new Path(relativeBucketPath, hash + "/" +
fileName))` (EntropyInjectExternalPathProvider), all of apache/paimon release-2.0.0.
"""

from __future__ import annotations

import collections
import os
import random
import subprocess
from pathlib import Path

import pyspark
import pytest

from dagster_paimon.errors import InvalidOptionError, UnsupportedLayoutError
from dagster_paimon.io.external import DataFilePaths, entropy_dirs, external_layout
from dagster_paimon.partition import Partition
from dagster_paimon.unsupported import COMPACTION, ORPHAN_REMOVAL, check_supported_layout
from tests.lsm.tables import cdc_table

ORACLE = Path(__file__).parent / "java" / "ExternalPathOracle.java"
ORACLE_JARS = ("guava-", "hadoop-client-api-", "hadoop-client-runtime-", "commons-lang3-")
PATHS = "data-file.external-paths"
STRATEGY = "data-file.external-paths.strategy"
WEIGHTS = "data-file.external-paths.weights"
SPECIFIC_FS = "data-file.external-paths.specific-fs"


def java_paths(requests: list[tuple[str, str, str, bool]]) -> list[str]:
    """The path Java's provider gives each (root, relative bucket path, file name, entropy)."""
    jars = Path(pyspark.__file__).parent / "jars"
    classpath = [str(j) for j in sorted(jars.glob("*.jar")) if j.name.startswith(ORACLE_JARS)]
    assert len(classpath) == len(ORACLE_JARS), classpath
    stdin = "".join(f"{root}\t{rel}\t{name}\t{str(e).lower()}\n" for root, rel, name, e in requests)
    done = subprocess.run(
        ["java", "-cp", ":".join(classpath), str(ORACLE)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def partition(table, value: str) -> Partition:
    """A dt partition of the cdc table."""
    return Partition((value,), tuple(table.partition_keys_fields))


def paths(warehouse, strategy: str, roots: list[str], **options: str):
    """A cdc table writing under `roots` by `strategy`."""
    return cdc_table(warehouse, **{PATHS: ",".join(roots), STRATEGY: strategy, **options})


@pytest.mark.parametrize("strategy", ["round-robin", "entropy-inject"])
def test_recorded_paths_are_javas(warehouse, tmp_path, strategy):
    roots = [f"file://{tmp_path}/ext one/", f"file:{tmp_path}/two"]
    table = paths(warehouse, strategy, roots)
    cases = []
    for value in ("2024-01-01", "2024-01-01 10:00", "a/b%c", "", "x#y?z"):
        part = partition(table, value)
        relative = table.path_factory().relative_bucket_path((value,), 3, canonical_partition=True)
        for root in roots:
            one = DataFilePaths(table.copy({PATHS: root}), part, 3)
            name = f"data-{random.random()}-0.parquet"
            physical = one.new_path(name)
            cases.append((root, relative, name, strategy == "entropy-inject", physical, one))
    expected = java_paths([c[:4] for c in cases])
    for (_, _, name, _, physical, one), java in zip(cases, expected, strict=True):
        assert one.external_path(physical) == java
        assert java.startswith("file:/") and java.endswith(f"/{name}")
        # written where Java's local file IO finds it: the path text, not URL-decoded
        with table.file_io.new_output_stream(physical) as out:
            out.write(b"x")
        assert os.path.isfile(java.removeprefix("file:"))
    escaped = [java for java in expected if "%3A" in java]
    assert escaped and all("dt=2024-01-01 10%3A00/bucket-3/" in java for java in escaped)


def test_entropy_dirs_are_guavas_murmur3():
    names = [f"data-{i}-{random.random()}-0.parquet" for i in range(20)] + ["changelog-é-0.orc"]
    java = java_paths([("file:/r", "bucket-0", n, True) for n in names])
    assert java == [f"file:/r/bucket-0/{entropy_dirs(n)}/{n}" for n in names]
    assert all(len(d) == 4 for d in entropy_dirs(names[0]).split("/")[:3])


def roots_of(table, strategy_files: int = 12, writers: int = 1) -> list[list[str]]:
    """The root (its last directory name) each new file goes to, writer by writer."""
    chosen = []
    for _ in range(writers):
        placer = DataFilePaths(table, partition(table, "2024-01-01"), 0)
        chosen.append(
            [
                placer.new_path(f"data-{i}.parquet").split("/dt=")[0].rsplit("/", 1)[1]
                for i in range(strategy_files)
            ]
        )
    return chosen


@pytest.mark.parametrize("strategy", ["round-robin", "ROUND-ROBIN", "specific-fs"])
def test_round_robin_cycles_from_a_random_root(warehouse, tmp_path, strategy):
    roots = [f"file:{tmp_path}/r{i}" for i in range(3)]
    table = paths(warehouse, strategy, roots, **{SPECIFIC_FS: "FILE"})
    random.seed(3)
    runs = roots_of(table, writers=30)
    for run in runs:
        start = int(run[0][1])
        assert run == [f"r{(start + i) % 3}" for i in range(12)]
    assert {run[0] for run in runs} == {"r0", "r1", "r2"}  # Java: ThreadLocalRandom.nextInt


def test_entropy_inject_cycles_from_the_second_root(warehouse, tmp_path):
    table = paths(warehouse, "entropy-inject", [f"file:{tmp_path}/r{i}" for i in range(3)])
    assert roots_of(table, writers=3) == [["r1", "r2", "r0"] * 4] * 3


def test_weight_robin_draws_roots_by_weight(warehouse, tmp_path):
    roots = [f"file:{tmp_path}/r{i}" for i in range(3)]
    table = paths(warehouse, "weight-robin", roots, **{WEIGHTS: "1,3,6,"})
    random.seed(5)
    counts = collections.Counter(roots_of(table, strategy_files=5000)[0])
    assert 400 < counts["r0"] < 600 and 1300 < counts["r1"] < 1700 and 2800 < counts["r2"] < 3200


def test_weight_robin_without_weights_or_a_second_root_is_round_robin(warehouse, tmp_path):
    roots = [f"file:{tmp_path}/r{i}" for i in range(2)]
    for table in (
        paths(warehouse, "weight-robin", roots),
        cdc_table(warehouse, **{PATHS: roots[0], STRATEGY: "weight-robin", WEIGHTS: "9,1"}),
    ):
        for run in roots_of(table, writers=5):
            assert len(set(run[0::2])) == 1 and len(set(run[1::2])) == 1


def test_specific_fs_keeps_the_roots_of_its_scheme(warehouse, tmp_path):
    table = paths(
        warehouse,
        "specific-fs",
        ["s3://elsewhere/x", f"file:{tmp_path}/r0"],
        **{SPECIFIC_FS: "file"},
    )
    assert set(roots_of(table, writers=3)[0]) == {"r0"}
    # orphan removal lists every root the option names, as Java does, but the s3 one is out of
    # the local warehouse's reach: it is left unlisted, not refused
    layout = external_layout(table)
    assert layout.roots == (f"file:{tmp_path}/r0",)
    assert layout.partition_prefixes == ("dt=",)


def test_without_a_strategy_files_stay_in_the_table(warehouse, tmp_path):
    table = cdc_table(warehouse, **{PATHS: f"file:{tmp_path}/r0"})
    placer = DataFilePaths(table, partition(table, "2024-01-01"), 1)
    path = placer.new_path("data-x.parquet")
    assert path.startswith(table.table_path) and placer.external_path(path) is None


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({PATHS: "/no/scheme", STRATEGY: "round-robin"}, PATHS),
        ({PATHS: "file:/a,,file:/b", STRATEGY: "round-robin"}, PATHS),
        ({PATHS: "s3://bucket/x", STRATEGY: "round-robin"}, PATHS),
        ({PATHS: "oss://bucket/x", STRATEGY: "entropy-inject"}, PATHS),
        ({PATHS: "file:/a", STRATEGY: "specific-fs"}, SPECIFIC_FS),
        ({PATHS: "file:/a", STRATEGY: "specific-fs", SPECIFIC_FS: "s3"}, SPECIFIC_FS),
        ({PATHS: "file:/a,file:/b", STRATEGY: "weight-robin", WEIGHTS: "1,2,3"}, WEIGHTS),
        ({PATHS: "file:/a,file:/b", STRATEGY: "weight-robin", WEIGHTS: "1,0"}, WEIGHTS),
        ({PATHS: "file:/a,file:/b", STRATEGY: "weight-robin", WEIGHTS: "1,x"}, WEIGHTS),
        ({PATHS: "file:/a", STRATEGY: "round-robin", WEIGHTS: "-1"}, WEIGHTS),
    ],
)
def test_options_we_cannot_honour_are_refused_by_name(warehouse, options, named):
    table = cdc_table(warehouse, **options)
    with pytest.raises(InvalidOptionError, match=f"'{named}'"):
        DataFilePaths(table, partition(table, "2024-01-01"), 0)
    with pytest.raises(InvalidOptionError, match=f"'{named}'"):
        external_layout(table)


def test_an_unknown_strategy_is_refused_for_every_operation(warehouse):
    table = cdc_table(warehouse, **{PATHS: "file:/a", STRATEGY: "hash-ring"})
    for operation in (COMPACTION, ORPHAN_REMOVAL):
        with pytest.raises(UnsupportedLayoutError, match=f"'{STRATEGY}'='hash-ring'"):
            check_supported_layout(table.table_schema, operation=operation)
    with pytest.raises(InvalidOptionError, match=STRATEGY):
        DataFilePaths(table, partition(table, "2024-01-01"), 0)

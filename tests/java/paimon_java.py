"""Paimon's own Java implementation as an oracle: it writes tables and reads the ones our engine
maintains, in two versions.

Paimon 0.9 is the Java bridge bundled in the pypaimon 0.2.0 sdist on PyPI; Paimon 1.0-SNAPSHOT
(September 2024) is the bundle in PyPI's paimon-python-ali 0.1.1 wheel. Both are pinned by hash;
Hadoop's client jars come from the pyspark wheel the project already installs. Each version's jar
and its compiled harnesses are cached under ~/.cache/dagster-paimon/paimon-java-<version>
(DAGSTER_PAIMON_JAVA_CACHE overrides the parent directory).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyspark

SPARK_JARS = ("hadoop-client-api-", "hadoop-client-runtime-", "slf4j-api-", "jcl-over-slf4j-")
SOURCES = Path(__file__).parent
# Every harness is a short-lived JVM: the client compiler alone and the serial collector start
# it in about half the CPU time (the suite runs hundreds of them on 2 cores). The JVM's own log
# goes to stderr, never into the JSON a harness prints on stdout; class-data sharing's notes on
# the classes it cannot archive are dropped.
JVM_FLAGS = (
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xlog:disable",
    "-Xlog:all=warning,cds=off,cds+dynamic=off:stderr",
)


@dataclass(frozen=True)
class JavaVersion:
    """One Paimon release as PyPI ships it: an archive pinned by hash and the jar inside it."""

    name: str
    url: str
    sha256: str
    member: str


PAIMON_0_9 = JavaVersion(
    "0.9",
    "https://files.pythonhosted.org/packages/1d/fd/"
    "397b04ac950a75ce71ecf613b9ee1a247e9da1b633b6ccf1847b513979d4/pypaimon-0.2.0.tar.gz",
    "43ac684779841da17528b5f241ede6149bcdab4d16f3cd80f713262f6ed04720",
    "pypaimon-0.2.0/deps/jars/paimon-python-java-bridge-0.9.0.jar",
)
PAIMON_1_0 = JavaVersion(
    "1.0",
    "https://files.pythonhosted.org/packages/0d/89/"
    "806de6c82b3a49c0ce3f33abdcfae2844f11be8373d033d1f39fad997a17/"
    "paimon_python_ali-0.1.1-py3-none-any.whl",
    "2a60eab3b2df8af59f393dc7e6d61af2956572b8eadfc9e664a0ec6d2a4688f3",
    "paimon_python_java/java_dependencies/paimon-python-java-bridge.jar",
)


def cache_dir(version: JavaVersion = PAIMON_0_9) -> Path:
    """Where one version's jar and compiled harnesses are kept between runs."""
    root = Path(
        os.environ.get("DAGSTER_PAIMON_JAVA_CACHE", Path.home() / ".cache" / "dagster-paimon")
    )
    return root / f"paimon-java-{version.name}"


def _extract(archive: Path, member: str) -> bytes:
    """One member of a PyPI sdist (tar) or wheel (zip)."""
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as wheel:
            return wheel.read(member)
    with tarfile.open(archive) as sdist:
        extracted = sdist.extractfile(member)
        assert extracted is not None, f"{member} missing from {archive.name}"
        return extracted.read()


def _paimon_jar(version: JavaVersion, cache: Path) -> Path:
    """The version's jar, downloaded once and checked against its pinned hash."""
    jar = cache / f"paimon-{version.name}.jar"
    if jar.exists():
        return jar
    cache.mkdir(parents=True, exist_ok=True)
    archive = cache / version.url.rsplit("/", 1)[1]
    with urllib.request.urlopen(version.url, timeout=600) as response, archive.open("wb") as out:
        shutil.copyfileobj(response, out)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != version.sha256:
        archive.unlink()
        raise RuntimeError(f"{archive.name} has sha256 {digest}, expected {version.sha256}")
    partial = jar.with_suffix(".part")
    partial.write_bytes(_extract(archive, version.member))
    partial.rename(jar)
    archive.unlink()
    return jar


def _spark_jars() -> list[Path]:
    """Hadoop client and logging jars shipped in the installed pyspark."""
    jars = sorted(Path(pyspark.__file__).parent.joinpath("jars").glob("*.jar"))
    found = [j for j in jars if j.name.startswith(SPARK_JARS)]
    if len(found) < len(SPARK_JARS):
        raise RuntimeError(f"pyspark lacks one of {SPARK_JARS} in its jars directory")
    return found


def classpath(version: JavaVersion = PAIMON_0_9) -> str:
    """Paimon, Hadoop and the harnesses compiled against that Paimon (a jar: class-data sharing
    takes no directory on the classpath); compiles when a harness source changed."""
    cache = cache_dir(version)
    jars = [_paimon_jar(version, cache), *_spark_jars()]
    sources = sorted(SOURCES.glob("*.java"))
    stamp = hashlib.sha256(b"".join(s.read_bytes() for s in sources)).hexdigest()[:16]
    classes = cache / f"classes-{stamp}.jar"
    base = os.pathsep.join(str(j) for j in jars)
    if not classes.exists():
        building = cache / f"building-{os.getpid()}"
        building.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run(
                ["javac", "-nowarn", "-d", str(building), "-cp", base, *map(str, sources)],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                raise RuntimeError(f"javac failed against Paimon {version.name}:\n{done.stderr}")
            partial = cache / f"classes-{stamp}.{os.getpid()}.part"
            with zipfile.ZipFile(partial, "w") as jar:
                for compiled in sorted(building.rglob("*.class")):
                    jar.write(compiled, compiled.relative_to(building).as_posix())
            partial.rename(classes)
        finally:
            shutil.rmtree(building)
    return os.pathsep.join([base, str(classes)])


def _archive(classpath: str) -> Path:
    """Where the class-data archive of one classpath on this java lives: named by both, as the
    JVM maps an archive only on the classpath (and jars) it was dumped with."""
    java = shutil.which("java") or "java"
    key = hashlib.sha256(f"{os.path.realpath(java)}\n{classpath}".encode()).hexdigest()[:16]
    return Path(classpath.rsplit(os.pathsep, 1)[1]).parent / f"harness-{key}.jsa"


class PaimonJava:
    """Runs the harnesses on one assembled classpath."""

    def __init__(self, version: JavaVersion = PAIMON_0_9) -> None:
        self.version = version
        self.classpath = classpath(version)
        self.archive = _archive(self.classpath)
        self._dumping = False

    def _java(self, harness: str, *args: str) -> tuple[list[str], Callable[[bool], None]]:
        """The command line of one harness run, and what to call with whether it succeeded.

        Runs map the classpath's class-data archive. While there is none, the first run dumps
        the classes it loaded as it exits (the JVM archives them at exit), and a successful
        run's dump becomes the archive: later JVMs map Paimon's classes instead of loading them.
        """
        argv = ["java", *JVM_FLAGS]
        if self.archive.exists():
            argv.append(f"-XX:SharedArchiveFile={self.archive}")
        elif not self._dumping:
            self._dumping = True
            dump = self.archive.with_name(f"{self.archive.stem}.{os.getpid()}.part")
            argv.append(f"-XX:ArchiveClassesAtExit={dump}")

            def adopt(ok: bool) -> None:
                if ok and dump.exists() and dump.stat().st_size > 0:
                    dump.replace(self.archive)
                else:
                    dump.unlink(missing_ok=True)
                    self._dumping = False  # the next run dumps

            return [*argv, "-cp", self.classpath, harness, *args], adopt
        return [*argv, "-cp", self.classpath, harness, *args], lambda ok: None

    def _run(self, what: str, harness: str, *args: str, stdin: str | None = None) -> str:
        """A harness's stdout; its failure is the test's, with the JVM's stderr."""
        argv, finished = self._java(harness, *args)
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=300)
        finished(done.returncode == 0)
        if done.returncode != 0:
            raise AssertionError(
                f"Paimon {self.version.name}'s {what} failed:\n{done.stderr[-4000:]}"
            )
        return done.stdout

    def rollback(self, warehouse: str, database: str, table: str, kind: str, target: str) -> None:
        """Paimon's FileStoreTable.rollbackTo(snapshot id) or rollbackTo(tag name)."""
        self._run("rollback", "PaimonRollback", warehouse, database, table, kind, target)

    def expire(
        self,
        warehouse: str,
        database: str,
        table: str,
        target: str = "snapshots",
        *,
        retain_min: int = 1,
        changelog_retain_min: int = 1,
    ) -> int:
        """Paimon's expiry of `target` ("snapshots" or "changelogs") with no time retention
        (see PaimonExpire.java); how many it expired."""
        args = (warehouse, database, table, target, str(retain_min), str(changelog_retain_min))
        return int(self._run(f"{target} expiry", "PaimonExpire", *args).strip().splitlines()[-1])

    def rescale(
        self,
        warehouse: str,
        database: str,
        table: str,
        bucket_num: int,
        partitions: list[dict[str, str]] | None = None,
    ) -> dict:
        """What Paimon's rescale procedure does (see PaimonRescale.java): {"rows", "snapshot",
        "kind"} of its overwrite."""
        args = [warehouse, database, table, str(bucket_num)]
        if partitions is not None:
            args.append(json.dumps(partitions))
        out = self._run("rescale", "PaimonRescale", *args)
        return json.loads(out.strip().splitlines()[-1])

    def consumers(self, warehouse: str, database: str, table: str, *action: str) -> dict:
        """Paimon's ConsumerManager: `expire CUTOFF_MS`, `reset ID NEXT` or nothing; then every
        consumer as {id: next snapshot}."""
        out = self._run("consumers", "PaimonConsumers", warehouse, database, table, *action)
        return json.loads(out.strip().splitlines()[-1])

    def read(self, warehouse: str, database: str, table: str) -> list[list]:
        """Every row Paimon's Java reader returns for the latest snapshot, in field order."""
        out = self._run("Java reader", "PaimonRead", warehouse, database, table)
        return [json.loads(line) for line in out.splitlines() if line]

    def write(
        self,
        warehouse: str,
        database: str,
        table: str,
        steps: list[list[list] | str],
        *,
        spec: dict | None = None,
        stream: bool = True,
    ) -> list[dict]:
        """Paimon's own writer in one JVM: each step one commit of rows ([row kind, value, ...])
        or "compact" (Java's full compaction of every bucket); `spec` creates the table first
        (see PaimonWrite.java). Stream mode commits as a Flink job does, batch mode as Spark."""
        args = [warehouse, database, table, "stream" if stream else "batch"]
        if spec is not None:
            args.append(json.dumps(spec))
        stdin = "".join(json.dumps(step) + "\n" for step in steps)
        out = self._run("Java writer", "PaimonWrite", *args, stdin=stdin)
        return [json.loads(line) for line in out.splitlines() if line.startswith("{")]

    def _start(self, harness: str, lines: list[dict]) -> Callable[[], tuple[int, str, str]]:
        """A harness in --jobs mode, running while the caller does other work; the returned
        call waits for its exit code, stdout and stderr (files, so no pipe ever fills)."""
        scratch = Path(tempfile.mkdtemp(prefix=f"{harness}-"))
        (scratch / "in").write_text("".join(json.dumps(line) + "\n" for line in lines))
        with (
            (scratch / "in").open() as stdin,
            (scratch / "out").open("w") as stdout,
            (scratch / "err").open("w") as stderr,
        ):  # the child keeps its own descriptors
            argv, finished = self._java(harness, "--jobs")
            process = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=stderr)

        def wait() -> tuple[int, str, str]:
            try:
                code = process.wait(timeout=600)
                finished(code == 0)
                return code, (scratch / "out").read_text(), (scratch / "err").read_text()
            finally:
                shutil.rmtree(scratch)

        return wait

    def _finish(
        self, what: str, waiting: Callable[[], tuple[int, str, str]], count: int
    ) -> list[list[dict]]:
        """Each job's output lines, grouped by job: a failed job's lines end in {"error": ...}."""
        code, out, err = waiting()
        if code != 0:
            raise AssertionError(f"Paimon {self.version.name}'s {what} failed:\n{err[-4000:]}")
        jobs: list[list[dict]] = [[] for _ in range(count)]
        for line in out.splitlines():
            if line.startswith("{"):
                parsed = json.loads(line)
                jobs[parsed.pop("job")].append(parsed)
        return jobs

    def start_writes(self, jobs: list[dict]) -> Callable[[], list[list[dict]]]:
        """Many tables' writes in one JVM, started now; the returned call waits for them.

        Each job is {"warehouse", "database", "table", "mode": "stream"|"batch", "spec"
        (optional), "steps"} (steps as for `write`); each result is the job's step lines
        ({"step", "messages", "snapshot"}), or ends in {"error": Java's stack trace}."""
        process = self._start("PaimonWrite", jobs)
        return lambda: self._finish("Java writer", process, len(jobs))

    def start_reads(self, reads: list[dict]) -> Callable[[], list[dict]]:
        """Many reads in one JVM, started now; the returned call waits for them.

        Each read is {"warehouse", "database", "table", "snapshot" or "tag" (optional)}; each
        result is {"fields": [...], "rows": [[...], ...]} or {"error": Java's stack trace}."""
        process = self._start("PaimonRead", reads)
        return lambda: [lines[0] for lines in self._finish("Java reader", process, len(reads))]

    def orc_rows(self, path: str, seeks: list[int]) -> tuple[list[list], dict[int, list]]:
        """Paimon's bundled ORC reader on one file: every row as text (None for null), and the
        row it reads after seeking to each of `seeks`."""
        out = self._run("ORC reader", "OrcRows", path, *map(str, seeks))
        rows: list[list] = []
        sought: dict[int, list] = {}
        for line in out.splitlines():
            tag, number, *values = line.split("\t")
            parsed = [None if v == "null" else v for v in values]
            if tag == "all":
                rows.append(parsed)
            elif tag == "seek":
                sought[int(number)] = parsed
        return rows, sought

    def file_index_tables(self, warehouse: str, specs: list[dict]) -> list[dict]:
        """Append tables db.<table> written by Paimon's writer with their file indexes, one JVM
        for all; each data file's name, bucket, embedded index (hex) and extra files (see
        FileIndexJava.java)."""
        stdin = "".join(json.dumps(spec) + "\n" for spec in specs)
        out = self._run("file index writer", "FileIndexJava", "write", warehouse, stdin=stdin)
        return [json.loads(line) for line in out.splitlines() if line.startswith("{")]

    def file_index_verdicts(self, checks: list[dict]) -> list[list[bool]]:
        """Whether Paimon's FileIndexPredicate keeps a file, per predicate of each check (an
        index blob as hex or a path, the file's columns, predicates)."""
        stdin = "".join(json.dumps(check) + "\n" for check in checks)
        out = self._run("file index reader", "FileIndexJava", "test", stdin=stdin)
        return [json.loads(line) for line in out.splitlines() if line.startswith("[")]

    def expire_partitions(self, warehouse: str, database: str, table: str, now: str) -> dict:
        """Paimon's PartitionExpire of one table at the local time `now` (ISO): the partitions
        it dropped (null without partition.expiration-time) and the latest snapshot's commit
        kind afterwards (see PartitionExpireRun.java)."""
        harness = "org.apache.paimon.operation.PartitionExpireRun"
        out = self._run("partition expiry", harness, warehouse, database, table, now)
        return json.loads(out.strip().splitlines()[-1])

    def append_compact(self, warehouse: str, database: str, table: str, *, full: bool) -> dict:
        """Paimon's dedicated compaction job of an append table, batch mode (see
        AppendTables.java): files per task, milliseconds inside the JVM, latest snapshot."""
        out = self._run(
            "append compaction",
            "AppendTables",
            "compact",
            warehouse,
            database,
            table,
            "full" if full else "auto",
        )
        return json.loads(out.strip().splitlines()[-1])

    def append_delete(
        self, warehouse: str, database: str, table: str, column: str, values: list[int]
    ) -> dict:
        """Spark's DELETE of a deletion-vector append table, through Paimon's
        AppendDeletionFileMaintainer: rows whose `column` is in `values` get deletion vectors."""
        out = self._run(
            "append delete",
            "AppendTables",
            "delete",
            warehouse,
            database,
            table,
            column,
            json.dumps(values),
        )
        return json.loads(out.strip().splitlines()[-1])

    def append_layout(self, warehouse: str, database: str, table: str) -> list[dict]:
        """Each (partition, bucket) Paimon's batch read plans: its data files and its rows in
        read order."""
        out = self._run("append layout", "AppendTables", "layout", warehouse, database, table)
        return json.loads(out.strip().splitlines()[-1])["buckets"]


def auto_tags(
    java: PaimonJava, warehouse: str, database: str, table: str, *, delete: str | None = None
) -> dict[str, int]:
    """Run Paimon's TagAutoManager once on a table, or with `delete` its deleteTag (see
    TagAuto.java); every tag and its snapshot afterwards."""
    extra = ("delete", delete) if delete is not None else ()
    out = java._run("tag handling", "TagAuto", warehouse, database, table, *extra)
    pairs = (line.split("\t") for line in out.splitlines() if "\t" in line)
    return {name: int(snapshot) for name, snapshot in pairs}

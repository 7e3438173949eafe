"""A class-data sharing archive for the driver JVM: Spark's classes mapped, not loaded.

A fresh driver JVM spends seconds loading, parsing and verifying the ~15,000 classes of Spark's
jars while it starts and plans its first queries. The JDK's application class-data sharing
(AppCDS, JDK 13+; Spark 4 needs 17) dumps the classes one run loaded into an archive that later
JVMs map ready-made: `bench/spark_start.py` measured 2.6-4.5 s less session start (3.3-5.8 s
less per process) on 2 busy cores. A run that finds no archive dumps one when its JVM exits
(`ArchiveClassesAtExit`), once, taking about 20 s longer. The archive's name hashes the java
binary and the Spark jars it was dumped from; a JVM that still cannot use it (another JDK build,
a classpath with a non-empty directory) runs without it, its CDS warnings silenced.

Off unless asked for: the archive is about 160 MB per (java, Spark jars) pair (each virtual
environment is another), written under the cache directory. `PAIMON_SPARK_CLASS_ARCHIVE=1`
(or `spark_session(class_archive=True)`) turns it on; without it the JVM starts as Spark
starts it and nothing is written.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

CACHE_ENV = "DAGSTER_PAIMON_CACHE"
SWITCH_ENV = "PAIMON_SPARK_CLASS_ARCHIVE"
ON = ("1", "true", "on", "yes")
QUIET = "-Xlog:cds=off,cds+dynamic=off"
STALE_DUMP_SECONDS = 24 * 3600
PROBE_SECONDS = 60


def cache_dir() -> Path:
    """Where dagster-paimon keeps files worth reusing across runs ($DAGSTER_PAIMON_CACHE, else
    the XDG cache directory)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dagster-paimon"


def java_binary() -> Path | None:
    """The java that spark-submit runs: $JAVA_HOME/bin/java, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


@dataclass(frozen=True)
class ClassArchive:
    """The archive of one (java, Spark jars) pair, and the JVM options that use or dump it."""

    path: Path

    def exists(self) -> bool:
        """Whether an earlier run dumped it."""
        return self.path.is_file()

    def use_options(self) -> str:
        """JVM options mapping the archive; were it damaged after all, the JVM's crash log goes
        to the temporary directory, not the caller's working directory."""
        crash_log = Path(tempfile.gettempdir()) / "dagster-paimon-hs_err_pid%p.log"
        return f"-XX:SharedArchiveFile={self.path} {QUIET} -XX:ErrorFile={crash_log}"

    def dump_target(self) -> Path:
        """A file of this run's own for the JVM to dump into (renamed into place once whole);
        dumps a killed run never adopted are removed after a day."""
        for stale in self.path.parent.glob("*.tmp"):
            with suppress(OSError):
                if time.time() - stale.stat().st_mtime > STALE_DUMP_SECONDS:
                    stale.unlink()
        return self.path.with_name(f"{self.path.stem}.{uuid.uuid4().hex}.tmp")

    def dump_options(self, target: Path) -> str:
        """JVM options dumping the classes loaded into `target` at exit."""
        log.warning(
            "no class-data archive for this java and Spark yet: the driver JVM writes %s as it "
            "exits (once; this run takes about 20 s longer, later ones start a few seconds faster)",
            self.path,
        )
        return f"-XX:ArchiveClassesAtExit={target} {QUIET}"

    def adopt(self, target: Path, *, whole: bool) -> None:
        """Move a dump into place if it is `whole` (its JVM exited cleanly, having written it)
        and a JVM maps it; a missing one (the JVM declined) is no error, a suspect one is
        removed: a JVM mapping a cut archive dies of SIGBUS before Spark starts."""
        if whole and target.is_file() and target.stat().st_size > 0 and maps_cleanly(target):
            os.replace(target, self.path)
            log.info("wrote the driver JVM's class-data archive %s", self.path)
        else:
            target.unlink(missing_ok=True)

    def discard(self) -> None:
        """Remove the archive (a JVM failed to start with it)."""
        log.warning("the driver JVM did not start with %s: removed it", self.path)
        self.path.unlink(missing_ok=True)


def maps_cleanly(archive: Path) -> bool:
    """Whether a JVM starts with the archive mapped (`-version`; its crash log kept aside)."""
    java = java_binary()
    if java is None:
        return False
    with tempfile.TemporaryDirectory() as scratch:
        probe = [
            str(java),
            f"-XX:SharedArchiveFile={archive}",
            *QUIET.split(),
            f"-XX:ErrorFile={scratch}/hs_err_pid%p.log",
            "-version",
        ]
        done = subprocess.run(probe, cwd=scratch, capture_output=True, timeout=PROBE_SECONDS)
    return done.returncode == 0


def enabled(setting: bool | None = None) -> bool:
    """Whether the driver JVM uses (and dumps) a class-data archive: `setting` when given, else
    $PAIMON_SPARK_CLASS_ARCHIVE (1, true, on or yes); off by default."""
    if setting is not None:
        return setting
    return os.environ.get(SWITCH_ENV, "").strip().lower() in ON


def class_archive(spark_home: Path, setting: bool | None = None) -> ClassArchive | None:
    """The archive for this java and the Spark under `spark_home`; None unless enabled
    (`enabled(setting)`), or without a java or a writable cache directory."""
    if not enabled(setting):
        return None
    java = java_binary()
    jars = spark_home / "jars"
    if java is None or not jars.is_dir():
        return None
    stat = java.stat()
    names = sorted(p.name for p in jars.iterdir())
    key = "\n".join([str(java), str(stat.st_size), str(stat.st_mtime_ns), str(jars), *names])
    directory = cache_dir() / "jvm"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        log.debug("no class-data archive: %s", e)
        return None
    if not os.access(directory, os.W_OK):
        return None
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return ClassArchive(directory / f"spark-driver-{digest}.jsa")

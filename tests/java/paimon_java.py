"""Paimon's own Java implementation (0.9) as an oracle: it reads the tables our engine maintains.

The jar is the Java bridge bundled in the pypaimon 0.2.0 sdist on PyPI (pinned by hash); Hadoop's
client jars come from the pyspark wheel the project already installs. Both and the compiled
harness are cached under ~/.cache/dagster-paimon (DAGSTER_PAIMON_JAVA_CACHE overrides it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import urllib.request
from pathlib import Path

import pyspark

SDIST_URL = (
    "https://files.pythonhosted.org/packages/1d/fd/"
    "397b04ac950a75ce71ecf613b9ee1a247e9da1b633b6ccf1847b513979d4/pypaimon-0.2.0.tar.gz"
)
SDIST_SHA256 = "43ac684779841da17528b5f241ede6149bcdab4d16f3cd80f713262f6ed04720"
BRIDGE_JAR = "pypaimon-0.2.0/deps/jars/paimon-python-java-bridge-0.9.0.jar"
SPARK_JARS = ("hadoop-client-api-", "hadoop-client-runtime-", "slf4j-api-", "jcl-over-slf4j-")
SOURCES = Path(__file__).parent


def cache_dir() -> Path:
    """Where the jar and compiled harnesses are kept between runs."""
    default = Path.home() / ".cache" / "dagster-paimon" / "paimon-java-0.9"
    return Path(os.environ.get("DAGSTER_PAIMON_JAVA_CACHE", default))


def _paimon_jar(cache: Path) -> Path:
    """Paimon 0.9's jar, downloaded once and checked against its pinned hash."""
    jar = cache / "paimon-0.9.0.jar"
    if jar.exists():
        return jar
    cache.mkdir(parents=True, exist_ok=True)
    sdist = cache / "pypaimon-0.2.0.tar.gz"
    with urllib.request.urlopen(SDIST_URL, timeout=300) as response, sdist.open("wb") as out:
        shutil.copyfileobj(response, out)
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        sdist.unlink()
        raise RuntimeError(f"pypaimon 0.2.0 sdist has sha256 {digest}, expected {SDIST_SHA256}")
    with tarfile.open(sdist) as archive:
        member = archive.extractfile(BRIDGE_JAR)
        assert member is not None, f"{BRIDGE_JAR} missing from the sdist"
        partial = jar.with_suffix(".part")
        partial.write_bytes(member.read())
        partial.rename(jar)
    sdist.unlink()
    return jar


def _spark_jars() -> list[Path]:
    """Hadoop client and logging jars shipped in the installed pyspark."""
    jars = sorted(Path(pyspark.__file__).parent.joinpath("jars").glob("*.jar"))
    found = [j for j in jars if j.name.startswith(SPARK_JARS)]
    if len(found) < len(SPARK_JARS):
        raise RuntimeError(f"pyspark lacks one of {SPARK_JARS} in its jars directory")
    return found


def classpath() -> str:
    """Paimon, Hadoop and the compiled harnesses; compiles when a harness source changed."""
    cache = cache_dir()
    jars = [_paimon_jar(cache), *_spark_jars()]
    sources = sorted(SOURCES.glob("*.java"))
    stamp = hashlib.sha256(b"".join(s.read_bytes() for s in sources)).hexdigest()[:16]
    classes = cache / f"classes-{stamp}"
    base = os.pathsep.join(str(j) for j in jars)
    if not classes.exists():
        building = cache / f"building-{os.getpid()}"
        building.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["javac", "-nowarn", "-d", str(building), "-cp", base, *map(str, sources)],
            check=True,
            capture_output=True,
        )
        building.rename(classes)
    return os.pathsep.join([base, str(classes)])


class PaimonJava:
    """Runs the harnesses on one assembled classpath."""

    def __init__(self) -> None:
        self.classpath = classpath()

    def read(self, warehouse: str, database: str, table: str) -> list[list]:
        """Every row Paimon's Java reader returns for the latest snapshot, in field order."""
        done = subprocess.run(
            ["java", "-cp", self.classpath, "PaimonRead", warehouse, database, table],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise AssertionError(f"Paimon's Java reader failed:\n{done.stderr[-4000:]}")
        return [json.loads(line) for line in done.stdout.splitlines() if line]

    def orc_rows(self, path: str, seeks: list[int]) -> tuple[list[list], dict[int, list]]:
        """Paimon's bundled ORC reader on one file: every row as text (None for null), and the
        row it reads after seeking to each of `seeks`."""
        done = subprocess.run(
            ["java", "-cp", self.classpath, "OrcRows", path, *map(str, seeks)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise AssertionError(f"Paimon's ORC reader failed:\n{done.stderr[-4000:]}")
        rows: list[list] = []
        sought: dict[int, list] = {}
        for line in done.stdout.splitlines():
            tag, number, *values = line.split("\t")
            parsed = [None if v == "null" else v for v in values]
            if tag == "all":
                rows.append(parsed)
            elif tag == "seek":
                sought[int(number)] = parsed
        return rows, sought

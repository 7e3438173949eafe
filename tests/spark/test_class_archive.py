"""The driver JVM's class-data archive: off unless asked for; once on, keyed by java and Spark
jars, dumped once, then mapped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dagster_paimon.spark.class_archive import (
    CACHE_ENV,
    SWITCH_ENV,
    class_archive,
    enabled,
    maps_cleanly,
)

pytestmark = pytest.mark.spark


def fake_spark(root: Path, jars: list[str]) -> Path:
    """A Spark home holding only jar names: what the archive's name depends on."""
    (root / "jars").mkdir(parents=True)
    for name in jars:
        (root / "jars" / name).write_bytes(b"")
    return root


@pytest.fixture
def opted_in(monkeypatch):
    """The archive switched on by the environment, as a user opts in."""
    monkeypatch.setenv(SWITCH_ENV, "1")


def test_the_archive_is_off_unless_asked_for(tmp_path, monkeypatch):
    spark = fake_spark(tmp_path / "spark", ["spark-core.jar"])
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(SWITCH_ENV, raising=False)
    assert not enabled() and class_archive(spark) is None
    assert class_archive(spark, True) is not None  # a caller's own setting wins
    for value in ("1", "true", "ON", "yes"):
        monkeypatch.setenv(SWITCH_ENV, value)
        assert enabled() and class_archive(spark) is not None
    for value in ("0", "off", "", "no"):
        monkeypatch.setenv(SWITCH_ENV, value)
        assert not enabled() and class_archive(spark) is None
    monkeypatch.setenv(SWITCH_ENV, "1")
    assert class_archive(spark, False) is None


def test_the_archive_is_named_by_the_spark_jars(tmp_path, monkeypatch, opted_in):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    one = class_archive(fake_spark(tmp_path / "a", ["spark-core-4.1.jar"]))
    same = class_archive(fake_spark(tmp_path / "b", ["spark-core-4.1.jar"]))
    other = class_archive(fake_spark(tmp_path / "c", ["spark-core-4.2.jar"]))
    assert one is not None and same is not None and other is not None
    assert one.path.parent == tmp_path / "cache" / "jvm"
    assert one.path != other.path
    assert one.path != same.path  # another jars directory is another classpath


def test_without_java_there_is_no_archive(tmp_path, monkeypatch, opted_in):
    spark = fake_spark(tmp_path / "spark", ["spark-core.jar"])
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert class_archive(spark) is None


def test_only_a_finished_dump_is_adopted(tmp_path, monkeypatch, opted_in):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    archive = class_archive(fake_spark(tmp_path / "spark", ["spark-core.jar"]))
    assert archive is not None
    empty = archive.dump_target()
    empty.write_bytes(b"")
    archive.adopt(empty, whole=True)
    assert not empty.exists() and not archive.exists()
    cut = archive.dump_target()
    cut.write_bytes(b"half of the classes")
    archive.adopt(cut, whole=False)  # its JVM did not exit cleanly
    assert not cut.exists() and not archive.exists()
    stale = archive.path.with_name("spark-driver-killed.tmp")
    stale.write_bytes(b"half")
    os.utime(stale, (0, 0))
    whole = archive.dump_target()
    assert not stale.exists()
    whole.write_bytes(b"classes")
    archive.adopt(whole, whole=True)
    assert archive.exists() and not whole.exists()


SESSION = """
import json, sys
from pathlib import Path
from dagster_paimon.spark.session import spark_session, starting_session
if sys.argv[1] == "dump":
    for _ in range(2):  # one JVM serves both blocks; it dumps as the process exits
        with starting_session("local[1]", quiet=True, source=False) as pending:
            spark = pending.session()
            app = spark.sparkContext.applicationId
            print(json.dumps({"rows": spark.range(5).count(), "app": app}))
else:
    spark = spark_session("local[1]", quiet=True, source=False)
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    maps = Path(f"/proc/{pid}/maps").read_text()
    print(json.dumps({"rows": spark.range(5).count(), "mapped": sys.argv[2] in maps}))
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/<pid>/maps")
def test_a_session_block_dumps_the_archive_and_the_next_jvm_maps_it(tmp_path):
    env = {**os.environ, CACHE_ENV: str(tmp_path / "cache"), "TMPDIR": str(tmp_path)}
    env[SWITCH_ENV] = "1"

    def run(*argv: str) -> tuple[dict, str]:
        done = subprocess.run(
            [sys.executable, "-c", SESSION, *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        printed = [json.loads(line) for line in done.stdout.strip().splitlines()]  # JSON only
        assert len({p.get("app") for p in printed}) == 1, printed  # one driver per process
        return printed[-1], done.stderr

    first, stderr = run("dump")
    archives = list((tmp_path / "cache" / "jvm").iterdir())
    assert first["rows"] == 5
    assert [p.suffix for p in archives] == [".jsa"], archives  # no temporary dump left
    assert "writes" in stderr and str(archives[0]) in stderr
    second, stderr = run("map", str(archives[0]))
    assert second == {"rows": 5, "mapped": True}
    assert "class-data archive" not in stderr
    assert list((tmp_path / "cache" / "jvm").iterdir()) == archives

    # A cut archive crashes a JVM mapping it: never adopted, and removed if found in place.
    cut = tmp_path / "cut.jsa"
    cut.write_bytes(archives[0].read_bytes()[: archives[0].stat().st_size // 2])
    assert maps_cleanly(archives[0]) and not maps_cleanly(cut)
    archives[0].chmod(0o644)
    os.replace(cut, archives[0])
    third, stderr = run("map", str(archives[0]))
    assert third == {"rows": 5, "mapped": False}
    assert "did not start with" in stderr and not archives[0].exists()
    assert list(tmp_path.glob("dagster-paimon-hs_err_pid*.log"))  # the crash log, kept aside


@pytest.mark.slow
def test_without_opting_in_a_session_block_writes_nothing(tmp_path):
    """The default: the JVM starts as Spark starts it, and no cache directory is touched."""
    home, cache = tmp_path / "home", tmp_path / "xdg-cache"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(cache), "TMPDIR": str(tmp_path)}
    for name in (SWITCH_ENV, CACHE_ENV):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", SESSION, "dump"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    printed = [json.loads(line) for line in done.stdout.strip().splitlines()]
    assert [p["rows"] for p in printed] == [5, 5]
    assert "class-data archive" not in done.stderr
    assert not cache.exists() and not list(home.rglob("*.jsa")) and not list(home.rglob("jvm"))

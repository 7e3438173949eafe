"""Spark session start in a fresh process, with and without the driver JVM's class-data archive.

Run: uv run python bench/spark_start.py [--repeat 3] [--master local[1]]

The archive is off by default (`PAIMON_SPARK_CLASS_ARCHIVE=1` turns it on). A first process
with it on dumps it into a cache of this run's own, as a user's first run does (timed apart);
then processes without and with it alternate, --repeat times each. Each process starts a
session as the CLI does (`starting_session`), then runs one small job (a grouped count); it
reports its session start (process start, imports included, to a ready session) and the job;
the whole process, JVM exit included, is timed from outside. Prints the medians both ways.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dagster_paimon.spark.class_archive import CACHE_ENV, SWITCH_ENV

CHILD = """
import json, sys, time
start = time.perf_counter()
from dagster_paimon.spark.session import starting_session
archive = sys.argv[2] == "on"
with starting_session(sys.argv[1], quiet=True, source=False, class_archive=archive) as p:
    spark = p.session()
    session = time.perf_counter() - start
    start = time.perf_counter()
    spark.range(200_000).selectExpr("id % 7 AS k").groupBy("k").count().collect()
    job = time.perf_counter() - start
print(json.dumps({"session": session, "job": job}))
"""


def run(master: str, archive: bool, cache: Path) -> dict[str, float]:
    """One fresh process: its session start and first job, and its wall time from outside."""
    env = {**os.environ, CACHE_ENV: str(cache)}
    env.pop(SWITCH_ENV, None)
    flag = "on" if archive else "off"
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, master, flag],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall": wall}


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    """Median seconds of each figure."""
    return {k: round(statistics.median(r[k] for r in runs), 2) for k in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="processes each way, alternating")
    parser.add_argument("--master", default="local[1]")
    args = parser.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="bench-spark-start-"))
    try:
        first = run(args.master, True, cache)
        archives = list((cache / "jvm").glob("*.jsa"))
        assert len(archives) == 1, archives
        size_mb = archives[0].stat().st_size / 1e6
        print(
            f"first run with the archive on, writing it ({size_mb:.0f} MB): "
            f"{first['wall']:.2f} s process ({first['session']:.2f} s session start)",
            flush=True,
        )
        without, with_archive = [], []
        for number in range(args.repeat):
            without.append(run(args.master, False, cache))
            with_archive.append(run(args.master, True, cache))
            print(
                f"  run {number + 1}: without {without[-1]['session']:.2f} s session start, "
                f"{without[-1]['wall']:.2f} s process; with the archive "
                f"{with_archive[-1]['session']:.2f} s, {with_archive[-1]['wall']:.2f} s",
                flush=True,
            )
        off, on = medians(without), medians(with_archive)
        print(f"without the archive (default): {off}")
        print(f"with the archive (PAIMON_SPARK_CLASS_ARCHIVE=1): {on}")
        figures = {
            "runs": args.repeat,
            "master": args.master,
            "archive_mb": round(size_mb),
            "first_run_writing_archive_seconds": round(first["wall"], 2),
            "session_start_seconds_without": off["session"],
            "session_start_seconds_with": on["session"],
            "first_job_seconds_without": off["job"],
            "first_job_seconds_with": on["job"],
            "process_seconds_without": off["wall"],
            "process_seconds_with": on["wall"],
            "session_start_saved_seconds": round(off["session"] - on["session"], 2),
            "process_saved_seconds": round(off["wall"] - on["wall"], 2),
        }
        print(json.dumps(figures, indent=2))
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()

"""One way to build a Spark session that can run our Python data source and executor tasks."""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkRuntimeError
from pyspark.find_spark_home import _find_spark_home
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from dagster_paimon.spark.class_archive import ClassArchive
from dagster_paimon.spark.class_archive import class_archive as archive_for

DEFAULT_MASTER = "local[*]"
MIN_LOCAL_SHUFFLE_PARTITIONS = 4
QUIET_LOG_CONFIG = "log4j2-quiet.properties"
ARCHIVE_DUMP_SECONDS = 120
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
STDERR_FD = 2


def spark_session(
    master: str = DEFAULT_MASTER,
    app_name: str = "dagster-paimon",
    conf: Mapping[str, str] | None = None,
    *,
    remote: str | None = None,
    quiet: bool = False,
    source: bool = True,
    class_archive: bool | None = None,
) -> SparkSession:
    """A session whose Python workers run this interpreter, with Arrow on and the UI off.

    Executors import dagster_paimon, so they must use this environment's Python; local masters
    get a few shuffle partitions per core, since each partition costs a task. `remote`
    (`sc://host:port`) gives a Spark Connect session instead: the server's own configuration
    decides its Python, `conf` sets session options. `source` registers the `paimon` data
    source on the session returned (also if it already existed); its first registration costs
    the JVM about a second, which callers that only ingest or compact (they run `mapInArrow`
    tasks, not the source) skip. `quiet` turns Spark's own logging off from JVM start (a CLI
    prints its own errors). With `class_archive` (default: $PAIMON_SPARK_CLASS_ARCHIVE, off), a
    driver JVM started here maps the class-data archive when one exists
    (`dagster_paimon.spark.class_archive`); only `starting_session` writes one.
    """
    pending = PendingSession(
        master,
        app_name,
        conf,
        remote=remote,
        quiet=quiet,
        source=source,
        class_archive=class_archive,
    )
    try:
        return pending.session()
    finally:
        pending.discard()


@contextmanager
def starting_session(
    master: str = DEFAULT_MASTER,
    app_name: str = "dagster-paimon",
    conf: Mapping[str, str] | None = None,
    *,
    remote: str | None = None,
    quiet: bool = False,
    source: bool = True,
    class_archive: bool | None = None,
) -> Iterator[PendingSession]:
    """`spark_session`'s session for the block, its driver JVM booting while the block runs.

    A classic session's JVM takes seconds to start and leaves this process idle; a caller with
    imports and table reads to do first does them inside the block, then takes the session
    with `session()`. Leaving the block without taking it stops the JVM. With `class_archive`
    (default: $PAIMON_SPARK_CLASS_ARCHIVE, off), when no class-data archive exists yet, a JVM
    launched here dumps one as this process exits, which the next process's JVM starts from:
    for commands, not for long-lived processes.
    """
    pending = PendingSession(
        master,
        app_name,
        conf,
        remote=remote,
        quiet=quiet,
        source=source,
        class_archive=class_archive,
        dump_archive=True,
    )
    try:
        yield pending
    finally:
        pending.discard()


class PendingSession:
    """A session being started: for a new classic driver, its JVM boots in a thread.

    The thread only launches the JVM and connects py4j to it (pyspark's `launch_gateway`, which
    imports nothing), so it never races the caller's imports; the SparkContext and session are
    built on the caller's thread by `session()`. With `class_archive` on (`enabled`), the JVM
    maps the class-data archive when there is one, or, with `dump_archive`, dumps it when this
    process exits (`finish_archive`).
    """

    def __init__(
        self,
        master: str,
        app_name: str,
        conf: Mapping[str, str] | None,
        *,
        remote: str | None,
        quiet: bool,
        source: bool,
        class_archive: bool | None = None,
        dump_archive: bool = False,
    ):
        self.remote = remote
        self.quiet = quiet
        self.source = source
        options = {} if remote else _classic_options(master, quiet)
        self.options = {**options, **(conf or {}), "spark.app.name": app_name}
        self._gateway: Any = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._archive: ClassArchive | None = None
        self._dump: Path | None = None
        self._mapped: str | None = None
        self._spark: SparkSession | None = None
        if not remote:
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        if not remote and SparkContext._active_spark_context is None:
            self._map_archive(class_archive, dump_archive)
            self._thread = threading.Thread(
                target=self._launch, name="spark-driver-launch", daemon=True
            )
            self._thread.start()

    def _map_archive(self, setting: bool | None, dump: bool) -> None:
        """Add the class-data archive's JVM options: map it, or dump it if allowed; nothing
        unless the archive is enabled."""
        self._archive = archive_for(Path(_find_spark_home()), setting)
        if self._archive is None:
            return
        if self._archive.exists():
            self._mapped = self._archive.use_options()
            self.options[JAVA_OPTIONS] = _joined_options(self.options, self._mapped)
        elif dump:
            self._dump = self._archive.dump_target()
            dumping = self._archive.dump_options(self._dump)
            self.options[JAVA_OPTIONS] = _joined_options(self.options, dumping)

    def _launch(self) -> None:
        """Start the driver JVM and connect to it; an error waits for `session()`. A JVM that
        dies starting with the archive mapped (a damaged file) is started again without it.
        The JVM writes to this process's stderr: stdout is the caller's (the CLI's JSON)."""
        try:
            try:
                self._gateway = launch_gateway(self._conf(), {"stdout": STDERR_FD})
            except PySparkRuntimeError:
                if self._mapped is None or self._archive is None:
                    raise
                extra = self.options[JAVA_OPTIONS].replace(self._mapped, "").strip()
                self.options[JAVA_OPTIONS] = extra
                self._mapped = None
                self._gateway = launch_gateway(self._conf(), {"stdout": STDERR_FD})
                self._archive.discard()  # the JVM starts without it: it was the archive
        except BaseException as e:  # re-raised by session()
            self._error = e

    def _conf(self) -> SparkConf:
        """The options as the SparkConf the JVM starts with (JVM flags must be there)."""
        return SparkConf(loadDefaults=False).setAll(list(self.options.items()))

    def _joined(self) -> Any:
        """The launched gateway not yet made a context, once the launch thread is done."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            raise self._error
        return self._gateway

    def session(self) -> SparkSession:
        """The session, waiting for the JVM to come up if it is still booting."""
        gateway = self._joined()
        if gateway is not None:
            SparkContext(conf=self._conf(), gateway=gateway)
            self._gateway = None
        builder = SparkSession.builder.remote(self.remote) if self.remote else SparkSession.builder
        for key, value in self.options.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        if gateway is not None and self._dump is not None:
            self._spark = spark
            atexit.register(self.finish_archive)
        if self.quiet and not self.remote:
            spark.sparkContext.setLogLevel("OFF")
        if self.source:
            from dagster_paimon.spark.source import register  # pypaimon: after the JVM's boot

            register(spark)
        return spark

    def discard(self) -> None:
        """Stop a JVM that was launched but never became a session."""
        try:
            gateway = self._joined()
        except BaseException:
            return
        if gateway is not None:
            self._gateway = None
            gateway.shutdown()
            if gateway.proc is not None:
                gateway.proc.kill()
                gateway.proc.wait()
        if self._dump is not None and self._spark is None:
            self._dump.unlink(missing_ok=True)

    def finish_archive(self) -> None:
        """Stop the session this launched and let its JVM exit, dumping the class-data archive,
        then move the dump into place (at interpreter exit).

        The JVM dumps as it exits, which stdin's end triggers (pyspark's gateway exits on EOF);
        pyspark's class-level gateway is cleared so a later session launches a fresh JVM.
        """
        if self._spark is None or self._dump is None or self._archive is None:
            return
        gateway = SparkContext._gateway
        self._spark.stop()
        exited_cleanly = False
        if gateway is not None:
            gateway.shutdown()
            if gateway.proc is not None and gateway.proc.stdin is not None:
                gateway.proc.stdin.close()
                try:
                    exited_cleanly = gateway.proc.wait(timeout=ARCHIVE_DUMP_SECONDS) == 0
                except subprocess.TimeoutExpired:
                    gateway.proc.kill()
                    gateway.proc.wait()
        SparkContext._gateway = None
        SparkContext._jvm = None
        self._archive.adopt(self._dump, whole=exited_cleanly)
        self._spark = self._dump = None


def _joined_options(options: Mapping[str, str], extra: str) -> str:
    """The driver's JVM options with `extra` added."""
    return f"{options.get(JAVA_OPTIONS, '')} {extra}".strip()


def _classic_options(master: str, quiet: bool) -> dict[str, str]:
    """A driver JVM in this process for `master`, its executors running this interpreter."""
    options = {
        "spark.master": master,
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }
    if quiet:
        config = Path(__file__).with_name(QUIET_LOG_CONFIG)
        options[JAVA_OPTIONS] = f"-Dlog4j2.configurationFile={config}"
    if master.startswith("local"):
        options["spark.sql.shuffle.partitions"] = str(_local_partitions(master))
    return options


def _local_partitions(master: str) -> int:
    """Two shuffle partitions per local core (at least 4), not Spark's 200 tiny tasks."""
    cores = master.removeprefix("local").strip("[]").split(",")[0]
    count = int(cores) if cores.isdigit() else (os.cpu_count() or 1)
    return max(MIN_LOCAL_SHUFFLE_PARTITIONS, 2 * count)


def activate(spark: SparkSession) -> None:
    """Make `spark` the active session of this thread's JVM side.

    Spark resolves Python data sources through the thread's active session; a thread that
    only received a DataFrame (a Dagster op, a worker thread) has none, and `format("paimon")`
    would not be found. Spark Connect sessions have no JVM side and need nothing.
    """
    jvm = getattr(spark, "_jvm", None)
    if jvm is not None:
        SparkSession._get_j_spark_session_class(jvm).setActiveSession(spark._jsparkSession)

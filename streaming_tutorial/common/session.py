"""The one SparkSession factory of the course, tuned for a laptop.

Lessons ask for optional connectors by name::

    spark = get_spark("08_kafka_streaming", kafka=True)
    spark = get_spark("11_delta_lake", delta=True)

The jars come from Maven Central through Spark's ordinary ``spark.jars.packages``
(Ivy caches them under ~/.ivy2.5.2 after the first run), always in the build that
matches the installed pyspark and Scala 2.13.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Sequence

from . import class_archive, paths
from .config import SCALA_BINARY
from .environment import require_java
from .errors import CourseError

# The SQLite JDBC driver used by lesson 10's default database.
SQLITE_JDBC_PACKAGE = "org.xerial:sqlite-jdbc:3.50.3.0"
DEFAULT_MASTER = "local[*]"
CHECKPOINT_MANAGER_CONF = "spark.sql.streaming.checkpointFileManagerClass"
_CHECKPOINTING = "org.apache.spark.sql.execution.streaming.checkpointing"
FILE_SYSTEM_CHECKPOINTS = f"{_CHECKPOINTING}.FileSystemBasedCheckpointFileManager"  # the course's
FILE_CONTEXT_CHECKPOINTS = f"{_CHECKPOINTING}.FileContextBasedCheckpointFileManager"  # Spark's default
# The JVM's logging: real warnings on stderr, known-harmless ones silenced (see the file).
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
DRIVER_JAVA_OPTIONS = (
    # Read at JVM start, so it also quiets the warnings printed before the session exists.
    f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}",
    # Only the JVM's quick (C1) compiler: a lesson's JVM lives a minute, not a day, and the
    # optimising C2 compiler spent a third of its CPU there. Measured on lesson 07 on 2 cores:
    # 37-44 CPU-seconds -> 26-27 (docs/BENCHMARKS.md). A long-running job wants C2: drop this.
    "-XX:TieredStopAtLevel=1",
    # With C1 alone the JVM reserves 48 MB for compiled code instead of 240 MB. A session that
    # runs for minutes (the test suite's runs ~500 tests) filled that: the compiler stopped and
    # method handles failed to link ("Out of space in CodeCache for method handle intrinsic"),
    # killing the SparkContext. Reserved address space, used only as code is compiled.
    "-XX:ReservedCodeCacheSize=240m",
    # The throughput collector: a lesson wants its CPU for the query, not for short GC pauses.
    # The default (G1) spent a quarter of a lesson's CPU on 2 cores: lesson 15's run took
    # 53 CPU-seconds with G1 and 36 with this; lesson 07's 21 -> 17 (docs/BENCHMARKS.md).
    "-XX:+UseParallelGC",
)


def kafka_package() -> str:
    """The Kafka connector built for this pyspark version and Scala 2.13."""
    import pyspark

    return f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{pyspark.__version__}"


def pin_time_zone() -> None:
    """Make this Python process show times in UTC, as the Spark session does.

    PySpark turns a collected timestamp into a naive datetime in the *process's* local
    time zone, whatever ``spark.sql.session.timeZone`` says. With both on UTC, a time
    prints the same in the console sink, in a lesson's own tables and in the tests, on
    every machine.
    """
    os.environ["TZ"] = "UTC"
    if hasattr(time, "tzset"):  # POSIX; the course runs on Linux, macOS and WSL2
        time.tzset()


def prepare_process_environment() -> None:
    """Environment variables Spark reads at JVM start; set before the first session."""
    pin_time_zone()
    # Bind to loopback: avoids slow reverse-DNS look-ups and 'hostname resolves to a
    # loopback address' warnings on laptops and containers.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers (UDFs, applyInPandas...) must run the same interpreter as the driver.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # The pandas state APIs (applyInPandasWithState, transformWithStateInPandas) pad their
    # batches with empty pandas frames, which pandas answers with a FutureWarning per batch
    # from every Python worker; the workers inherit this and stay quiet.
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")


def get_spark(
    app_name: str,
    *,
    master: str | None = None,
    kafka: bool = False,
    delta: bool = False,
    jdbc: bool = False,
    ui: bool = True,
    extra_conf: dict[str, str] | None = None,
    extra_packages: Sequence[str] = (),
):
    """Create (or return the running) SparkSession with the course's defaults.

    Only the first call in a process decides which packages are loaded; the tests
    therefore create one session with every connector. ``extra_packages`` adds Maven
    coordinates (e.g. a JDBC driver) to the connectors asked for by name.
    """
    require_java()
    prepare_process_environment()

    from pyspark.sql import SparkSession

    cores = os.cpu_count() or 2
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master or DEFAULT_MASTER)
        # 200 shuffle partitions (the default) means 200 tiny state stores per
        # stateful micro-batch: ~10 s instead of ~0.4 s on a 2-core laptop.
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.default.parallelism", str(cores))
        # Timestamps print the same on every machine.
        .config("spark.sql.session.timeZone", "UTC")
        # The progress bar interleaves with the console sink's tables.
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "true" if ui else "false")
        # Temporary checkpoints (console/memory sinks without checkpointLocation)
        # are deleted when the query stops instead of piling up in /tmp.
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .config("spark.driver.host", "127.0.0.1")
        # Adaptive execution does not apply to streaming plans; off, so Spark does not
        # warn about it on every query.
        .config("spark.sql.adaptive.enabled", "false")
        # Checkpoint files (offset and commit logs, state store files) through Hadoop's
        # FileSystem API instead of its FileContext API (Spark's default). On a local disk the
        # rename that makes each file appear whole is atomic either way, and each micro-batch
        # writes several such files: measured with python -m benchmarks on 2 cores, a
        # stateless batch 112 -> 53 ms, a stateful one 279 -> 110 ms (docs/PERFORMANCE.md).
        # On HDFS, drop this line: there Spark's default is the one built for it.
        .config(CHECKPOINT_MANAGER_CONF, FILE_SYSTEM_CHECKPOINTS)
    )
    extra_conf = dict(extra_conf or {})
    archive_options, pending_archive = class_archive.java_options()
    # A lesson's own JVM options (extra_conf) come after the course's, not instead of them.
    java_options = [*DRIVER_JAVA_OPTIONS, *archive_options, extra_conf.pop("spark.driver.extraJavaOptions", "")]
    builder = builder.config("spark.driver.extraJavaOptions", " ".join(filter(None, java_options)))
    packages = []
    if delta:
        packages.append(delta_package())
        builder = builder.config(
            "spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension"
        ).config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        # Delta rebuilds a table's snapshot from its log in 50 tasks by default: on a
        # 2-core laptop that made every streaming commit several times slower.
        builder = builder.config("spark.databricks.delta.snapshotPartitions", str(cores))
    if kafka:
        packages.append(kafka_package())
    if jdbc:
        packages.append(SQLITE_JDBC_PACKAGE)
    packages.extend(extra_packages)
    jars = cached_jars(packages)
    if jars:
        # Resolved before: hand Spark the jar files and skip Ivy's resolution (3-4 s per start).
        builder = builder.config("spark.jars", ",".join(jars))
    elif packages:
        builder = builder.config("spark.jars.packages", ",".join(packages))
    for key, value in extra_conf.items():
        builder = builder.config(key, value)

    try:
        spark = builder.getOrCreate()
    except Exception as error:  # py4j/JVM start-up failures have no narrower type
        raise CourseError(_startup_advice(error, packages or delta)) from error
    spark.sparkContext.setLogLevel("WARN")
    if pending_archive is not None:
        class_archive.record_writer(pending_archive, spark._jvm.java.lang.ProcessHandle.current().pid())
    if packages and not jars:
        remember_jars(packages, spark.sparkContext.getConf().get("spark.jars", ""))
    return spark


def delta_package() -> str:
    """Delta Lake built for this pyspark's major.minor version and Scala 2.13 (as delta-spark's pip helper names it)."""
    import importlib.metadata

    import pyspark

    spark_minor = ".".join(pyspark.__version__.split(".")[:2])
    return f"io.delta:delta-spark_{spark_minor}_{SCALA_BINARY}:{importlib.metadata.version('delta-spark')}"


def _jar_list(packages: Sequence[str]) -> Path:
    key = hashlib.sha256(",".join(sorted(packages)).encode()).hexdigest()[:16]
    return paths.user_cache_dir() / "spark-jars" / f"{key}.txt"


def cached_jars(packages: Sequence[str]) -> list[str]:
    """The jar files Ivy resolved for exactly these packages before, if every one is still there."""
    if not packages:
        return []
    try:
        jars = _jar_list(packages).read_text(encoding="utf-8").split()
    except OSError:
        return []
    return jars if jars and all(Path(jar).is_file() for jar in jars) else []


def remember_jars(packages: Sequence[str], spark_jars: str) -> None:
    """Keep the jar files Ivy resolved for ``packages`` (Spark lists them in spark.jars)."""
    jars = [jar.removeprefix("file://") for jar in spark_jars.split(",") if jar.endswith(".jar")]
    if jars and all(Path(jar).is_file() for jar in jars):
        target = _jar_list(packages)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(jars) + "\n", encoding="utf-8")


def _startup_advice(error: Exception, wanted_packages: bool) -> str:
    text = str(error)
    if wanted_packages and ("resolve" in text.lower() or "ivy" in text.lower() or "JAVA_GATEWAY" in text):
        return (
            "Spark could not start because it could not download its connector jars (Kafka, "
            "Delta Lake or the SQLite driver) from Maven Central. The first run needs network "
            "access to Maven Central; later runs use the cache in ~/.ivy2.5.2. Check your "
            "connection or proxy, then run the lesson again. "
            f"(Spark said: {text.strip().splitlines()[0][:300] if text.strip() else type(error).__name__})"
        )
    return (
        "Spark could not start. Run 'python streaming_tutorial/00_setup_environment.py' to check "
        "Java and pyspark, and read the lines above this message for the JVM's own error. "
        f"(Spark said: {text.strip().splitlines()[0][:300] if text.strip() else type(error).__name__})"
    )

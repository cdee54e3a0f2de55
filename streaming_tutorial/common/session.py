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
from urllib.parse import urlparse

from common import paths
from common.config import SCALA_BINARY
from infra import jvm
from infra.environment import require_java
from infra.errors import CourseError

# The packages ship_course_code sends to a cluster's executors.
SHIPPED_PACKAGES = ("common", "teaching", "infra")
# The SQLite JDBC driver used by lesson 10's default database.
SQLITE_JDBC_PACKAGE = "org.xerial:sqlite-jdbc:3.50.3.0"
DEFAULT_MASTER = "local[*]"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
# How long a cluster session waits for its first executor before it sizes its shuffle partitions.
EXECUTOR_WAIT_SECONDS = 60.0
CHECKPOINT_MANAGER_CONF = "spark.sql.streaming.checkpointFileManagerClass"
_CHECKPOINTING = "org.apache.spark.sql.execution.streaming.checkpointing"
FILE_SYSTEM_CHECKPOINTS = f"{_CHECKPOINTING}.FileSystemBasedCheckpointFileManager"  # the course's
FILE_CONTEXT_CHECKPOINTS = (
    f"{_CHECKPOINTING}.FileContextBasedCheckpointFileManager"  # Spark's default
)
# The JVM's logging: real warnings on stderr, known-harmless ones silenced (see the file).
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
LOG4J_OPTION = "-Dlog4j2.configurationFile="
# A lesson's run reads this file too: the JVM's stack traces go to the run's log file, and the
# terminal keeps one line per warning or error, so the course's advice on a failure comes first
# (see the file). get_spark(log_file=...) gives the driver both files and the log's path.
RUN_LOG_CONFIG = Path(__file__).with_name("log4j2-run-log.properties")
RUN_LOG_PROPERTY = "streaming.course.log"  # the Java system property that file reads
# The log a lesson's process opened; its child processes (lesson 16's killed runs) inherit the
# variable and add to that log instead of emptying it.
RUN_LOG_ENV = "STREAMING_COURSE_RUN_LOG"
DRIVER_JAVA_OPTIONS = (
    # Read at JVM start, so it also quiets the warnings printed before the session exists.
    f"{LOG4J_OPTION}{LOG4J_CONFIG.as_uri()}",
    # Only the JVM's quick (C1) compiler: a lesson's JVM lives a minute, not a day, and the
    # optimising C2 compiler spent a third of its CPU there. Measured on lesson 07 on 2 cores:
    # 37-44 CPU-seconds -> 26-27 (docs/BENCHMARKS.md). A long-running job wants C2: drop this
    # (a cluster's executors never get it: executor_java_options).
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


def is_local(master: str) -> bool:
    """``local``, ``local[N]``, ``local[*]``...: driver and executors are this one JVM."""
    return master.strip().startswith("local")


def on_this_machine(master: str) -> bool:
    """A local master, or a cluster whose master listens on this machine's loopback address."""
    host = urlparse(master.strip()).hostname if "://" in master else None
    return is_local(master) or host in LOOPBACK_HOSTS


def prepare_process_environment(master: str = DEFAULT_MASTER) -> None:
    """Environment variables Spark reads at JVM start; set before the first session."""
    pin_time_zone()
    if on_this_machine(master):
        # Bind to loopback: avoids slow reverse-DNS look-ups and 'hostname resolves to a
        # loopback address' warnings on laptops and containers. Not on a remote cluster: its
        # executors connect back to the driver, which must listen where they can reach it.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers (UDFs, applyInPandas...) must run the same interpreter as the driver.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # The pandas state APIs (applyInPandasWithState, transformWithStateInPandas) pad their
    # batches with empty pandas frames, which pandas answers with a FutureWarning per batch
    # from every Python worker; the workers inherit this and stay quiet.
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")


def submitted_conf() -> dict[str, str] | None:
    """spark-submit's settings (``--master``, ``--packages``, ``--conf``...) when this Python
    process was started by spark-submit, else None.

    spark-submit starts the JVM first and hands Python its address (PYSPARK_GATEWAY_PORT);
    ``python lesson.py`` has no JVM yet, and the session below starts one.
    """
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark import SparkConf, SparkContext

    # connect to spark-submit's JVM, whose settings SparkConf reads
    SparkContext._ensure_initialized()
    return dict(SparkConf().getAll())


def missing_packages(conf: dict[str, str], packages: Sequence[str]) -> list[str]:
    """The Maven packages a lesson needs that spark-submit was not given (by --packages or --jars).

    They cannot be added later: spark-submit resolved its packages and put them on the
    driver's class path before this Python process started.
    """
    given = conf.get("spark.jars.packages", "")
    jars = conf.get("spark.jars", "")
    missing = []
    for package in packages:
        group_artifact = package.rsplit(":", 1)[0]
        artifact = group_artifact.split(":")[-1]
        if group_artifact not in given and f"{artifact}-" not in jars:
            missing.append(package)
    return missing


def packages_advice(missing: Sequence[str], packages: Sequence[str]) -> str:
    return (
        f"This lesson needs {', '.join(missing)}, which spark-submit was not given. "
        "spark-submit puts its packages on the driver's class path before the lesson's Python "
        "starts, so the lesson cannot add them now. Run it again with: spark-submit --packages "
        f"{','.join(packages)} ... (or run the lesson with plain python, which starts Spark with "
        "them; give them one way, not both, so Ivy resolves them once)."
    )


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
    log_file: Path | None = None,
):
    """Create (or return the running) SparkSession with the course's defaults.

    Only the first call in a process decides which packages are loaded; the tests
    therefore create one session with every connector. ``extra_packages`` adds Maven
    coordinates (e.g. a JDBC driver) to the connectors asked for by name.

    ``master``: ``local[*]`` by default, or spark-submit's ``--master`` when spark-submit
    started this process; a cluster URL (``spark://host:7077``, ``yarn``, ``k8s://...``)
    works too: see the README's "Beyond one machine".

    ``log_file`` (a lesson's run: ``paths.log_for(lesson)``): the JVM's stack traces go there
    and the terminal gets one line per warning or error (RUN_LOG_CONFIG), when this call starts
    the JVM; a JVM already running, or started by spark-submit, keeps its logging.
    """
    require_java()
    submitted = submitted_conf()
    master = master or (submitted or {}).get("spark.master") or DEFAULT_MASTER
    prepare_process_environment(master)

    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    local, here = is_local(master), on_this_machine(master)
    cores = os.cpu_count() or 2
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        # Timestamps print the same on every machine.
        .config("spark.sql.session.timeZone", "UTC")
        # The progress bar interleaves with the console sink's tables.
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "true" if ui else "false")
        # A query without checkpointLocation (console and memory sinks) gets a temporary one.
        # Spark deletes it when the query stops without an error (and at the JVM's exit); this
        # deletes it after a failure too, so a session that goes on does not keep it in /tmp.
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        # Adaptive query execution (AQE) off, for speed on the course's small data. In Spark 4.2
        # it would apply to every batch job, MERGE and stateless micro-batch (Spark turns it off
        # only in stateful and real-time-mode queries); with 2 shuffle partitions it has nothing
        # to coalesce, and its re-planning cost about a tenth: lesson 11's MERGE 1.02 -> 1.15 s,
        # a Delta read 1.03 -> 1.15 s, lessons 09-11's tests 101 -> 114 s, the same rows
        # (docs/PERFORMANCE.md). For a job on real data volumes keep Spark's default (on).
        .config("spark.sql.adaptive.enabled", "false")
    )
    if paths.REMOTE_ROOT is None:
        # Checkpoint files (offset and commit logs, state store files) through Hadoop's
        # FileSystem API instead of its FileContext API (Spark's default). On a local disk the
        # rename that makes each file appear whole is atomic either way, and each micro-batch
        # writes several such files: measured with python -m benchmarks on 2 cores, a
        # stateless batch 112 -> 53 ms, a stateful one 279 -> 110 ms (docs/PERFORMANCE.md).
        # On a local disk no protection is lost: both managers refuse a second writer of a log
        # entry (offsets/N, commits/N) by checking that the file does not exist yet just before
        # the rename (Hadoop's FileContext does it inside its rename, this manager just before
        # its own), and neither check is atomic with the rename (tests/common/test_session.py).
        # Only for local (and file:) storage: on HDFS, where FileContext's rename without
        # overwrite is atomic, or an object store (--storage), Spark's default is kept.
        builder = builder.config(CHECKPOINT_MANAGER_CONF, FILE_SYSTEM_CHECKPOINTS)
    if local:
        # 200 shuffle partitions (the default) means 200 tiny state stores per
        # stateful micro-batch: ~10 s instead of ~0.4 s on a 2-core laptop. One per core.
        # (On a cluster the executors' cores count: set once they are known, below.)
        builder = builder.config("spark.sql.shuffle.partitions", str(cores)).config(
            "spark.default.parallelism", str(cores)
        )
    if here:
        builder = builder.config("spark.driver.host", "127.0.0.1")
    extra_conf = dict(extra_conf or {})
    # A JVM already running (this process opened a session before, or spark-submit started it)
    # keeps its options. pyspark sets _gateway when it launches or joins one; no public API says.
    starts_jvm = submitted is None and SparkContext._gateway is None
    # A lesson's run: the JVM's stack traces to its log file, one line per event on the terminal.
    logs_to_file = log_file is not None and starts_jvm and open_run_log(log_file)
    if submitted is None:
        # The driver's JVM starts with the session; under spark-submit it already runs
        # (give spark-submit --driver-java-options instead).
        # The class archive python course.py trained, if there is one yet (infra/jvm.py).
        archive_options = jvm.class_archive_options()
        java_options = list(DRIVER_JAVA_OPTIONS)
        if logs_to_file:
            java_options = [
                *run_log_options(log_file),
                *(option for option in java_options if not option.startswith(LOG4J_OPTION)),
            ]
        # A lesson's own JVM options (extra_conf) come after the course's, not instead of them.
        java_options = [
            *java_options,
            *archive_options,
            extra_conf.pop("spark.driver.extraJavaOptions", ""),
        ]
        builder = builder.config(
            "spark.driver.extraJavaOptions", " ".join(filter(None, java_options))
        )
    executor_options = executor_java_options(here)
    if not local and executor_options:
        builder = builder.config("spark.executor.extraJavaOptions", executor_options)
    packages = []
    if delta:
        packages.append(delta_package())
        builder = builder.config(
            "spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension"
        ).config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        if local:
            # Delta rebuilds a table's snapshot from its log in 50 tasks by default: on a
            # 2-core laptop that made every streaming commit several times slower.
            builder = builder.config("spark.databricks.delta.snapshotPartitions", str(cores))
    if kafka:
        packages.append(kafka_package())
    if jdbc:
        packages.append(SQLITE_JDBC_PACKAGE)
    packages.extend(extra_packages)
    if submitted is not None:
        # spark-submit resolved its --packages already: never a second time here.
        missing = missing_packages(submitted, packages)
        if missing:
            raise CourseError(packages_advice(missing, packages))
        jars = []
    else:
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
        # Only a start that had Ivy resolve packages can have failed for want of a download.
        resolving = packages if submitted is None and not jars else []
        raise CourseError(_startup_advice(error, resolving)) from error
    spark.sparkContext.setLogLevel("WARN")
    if logs_to_file:
        RUN_LOG["file"] = log_file
    if packages and not jars and submitted is None:
        remember_jars(packages, spark.sparkContext.getConf().get("spark.jars", ""))
    if not local:
        ship_course_code(spark)
        explicit = (
            "spark.sql.shuffle.partitions" in extra_conf
            or "spark.sql.shuffle.partitions" in (submitted or {})
        )
        if not explicit:
            match_cluster_cores(spark, delta=delta)
    return spark


def executor_java_options(here: bool) -> str:
    """The JVM options a cluster's executors get: the course's quiet logging, where they can read
    its file (a worker on this machine), and nothing else.

    The driver's quick compiler and throughput collector (DRIVER_JAVA_OPTIONS) suit a lesson's
    JVM, which lives a minute; an executor serves a whole application and may run for days, so it
    keeps the JVM's own compiler (C2 too) and collector.
    """
    return f"{LOG4J_OPTION}{LOG4J_CONFIG.as_uri()}" if here else ""


# The log file of this process's JVM, once get_spark started one with a log_file.
RUN_LOG: dict[str, Path] = {}


def run_log_options(log_file: Path) -> list[str]:
    """The driver's options for a lesson's run: the course's log4j configuration, then
    RUN_LOG_CONFIG merged over it, and the log file's path as the property that file reads."""
    configuration = f"{LOG4J_OPTION}{LOG4J_CONFIG.as_uri()},{RUN_LOG_CONFIG.as_uri()}"
    return [configuration, java_property(RUN_LOG_PROPERTY, str(log_file))]


def java_property(name: str, value: str) -> str:
    """``-Dname=value`` as one of Spark's extraJavaOptions, which are split at white space
    except inside double quotes (a course folder may have a space in its path)."""
    option = f"-D{name}={value}"
    if any(character.isspace() for character in option):
        return f'"{option}"'
    return option


def open_run_log(log_file: Path) -> bool:
    """Start the run's log empty, unless this process is a child of the lesson's run that
    opened it (RUN_LOG_ENV): then the child's JVM adds to it. False, said on stderr, when the
    file cannot be written (the lesson runs on, its stack traces on the terminal)."""
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        if os.environ.get(RUN_LOG_ENV) != str(log_file):
            log_file.write_text("", encoding="utf-8")
            os.environ[RUN_LOG_ENV] = str(log_file)
    except OSError as error:
        print(
            f"Cannot write the run's log {log_file} ({error.strerror or error}): the JVM's "
            "stack traces stay on the terminal.",
            file=sys.stderr,
        )
        return False
    return True


def run_log() -> Path | None:
    """The log file of this process's JVM (get_spark's log_file), if anything was logged."""
    log_file = RUN_LOG.get("file")
    if log_file is None or not log_file.exists() or log_file.stat().st_size == 0:
        return None
    return log_file


def ship_course_code(spark) -> None:
    """Send the course's shared code to the executors, as spark-submit's ``--py-files`` would.

    A function the executors run (a UDF, an applyInPandasWithState function) is sent by
    value when the lesson defines it, but by *reference* when it comes from an importable
    module such as ``common.parsing``: the executor imports it. Locally the executors are
    the driver's own process and find it; a cluster's workers have only what they are sent.
    """
    lessons = Path(__file__).resolve().parent.parent
    # The shared packages and the lessons' companions (lesson17_alerts.py, ...): whatever a
    # lesson's executor-side function may import.
    sources = [
        *sorted(path for package in SHIPPED_PACKAGES for path in (lessons / package).glob("*.py")),
        *sorted(lessons.glob("lesson*.py")),
        LOG4J_CONFIG,
    ]
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in sources)).hexdigest()[:12]
    archive = paths.RUNTIME_DIR / "spark" / f"course-common-{digest}.zip"
    if not archive.exists():
        import zipfile

        archive.parent.mkdir(parents=True, exist_ok=True)
        partial = archive.with_suffix(f".{os.getpid()}.partial")
        with zipfile.ZipFile(partial, "w") as bundle:
            for path in sources:
                bundle.write(path, path.relative_to(lessons).as_posix())
        os.replace(partial, archive)  # whole or not at all, when two lessons start at once
    spark.sparkContext.addPyFile(str(archive))


def match_cluster_cores(spark, *, delta: bool = False) -> int:
    """Shuffle partitions = the cluster's executor cores (Spark's default: 200 on any cluster).

    Every stateful operator keeps one state store per shuffle partition, and a micro-batch
    runs one task per partition: fewer partitions than cores leaves cores idle, many more
    makes every small batch pay for hundreds of tiny tasks. The number is written into a
    query's checkpoint at its first run and kept after that, whatever the cluster then
    has. Executors register a moment after the session starts, so this waits for the
    first (up to EXECUTOR_WAIT_SECONDS); with dynamic allocation, set the number yourself.
    """
    context = spark.sparkContext
    deadline = time.monotonic() + EXECUTOR_WAIT_SECONDS
    # The block managers Spark knows: the driver's, plus one per executor.
    while context._jsc.sc().getExecutorMemoryStatus().size() < 2 and time.monotonic() < deadline:
        time.sleep(0.2)  # waiting for the cluster to start an executor
    cores = context.defaultParallelism  # standalone, YARN, Kubernetes: the executors' total cores
    spark.conf.set("spark.sql.shuffle.partitions", str(cores))
    if delta:
        spark.conf.set("spark.databricks.delta.snapshotPartitions", str(cores))
    return cores


def delta_package() -> str:
    """Delta Lake built for this pyspark's major.minor version and Scala 2.13 (as delta-spark's
    pip helper names it)."""
    import importlib.metadata

    import pyspark

    spark_minor = ".".join(pyspark.__version__.split(".")[:2])
    return (
        f"io.delta:delta-spark_{spark_minor}_{SCALA_BINARY}:"
        f"{importlib.metadata.version('delta-spark')}"
    )


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


def _startup_advice(error: Exception, resolving: Sequence[str]) -> str:
    """``resolving``: the packages Ivy had to resolve at this start (none when their jar files
    were known from an earlier start)."""
    text = str(error)
    said = text.strip().splitlines()[0][:300] if text.strip() else type(error).__name__
    if resolving and ("resolve" in text.lower() or "ivy" in text.lower() or "JAVA_GATEWAY" in text):
        return (
            "Spark could not start because it could not download its connector jars "
            f"({', '.join(resolving)}) from Maven Central. The first start with them needs "
            "network access to Maven Central; later starts use the cache in ~/.ivy2.5.2. Check "
            "your connection or proxy, then run the same command again (the lines above, "
            "'UNRESOLVED DEPENDENCIES', name each jar Ivy could not get). "
            f"(Spark said: {said})"
        )
    return (
        "Spark could not start. Run 'python streaming_tutorial/00_setup_environment.py' to check "
        "Java and pyspark, and read the lines above this message for the JVM's own error. "
        f"(Spark said: {said})"
    )

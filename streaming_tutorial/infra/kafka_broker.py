"""The course's own Kafka broker: real Apache Kafka, one node, no Docker.

    python local_kafka.py start    # first time: fetch the jars, format the storage; then start
    python local_kafka.py status   # running or not, ports, PID, data folder
    python local_kafka.py topics   # list the topics (--create NAME adds one)
    python local_kafka.py stop     # SIGTERM, wait, then kill if it must

    with kafka_for_lesson() as bootstrap:      # a lesson: a broker for this run, whatever it takes
        ...

How it works
  - Jars: Apache Ivy (it ships inside pyspark, as Spark's own dependency resolver)
    fetches ``org.apache.kafka:kafka_<SCALA_BINARY>`` (the Scala build in common/config.py)
    and its dependencies from Maven Central: 45 jars, 43 MB, about a minute the first time.
  - Where the jars live: ONE folder per Kafka version, shared by every course folder and
    every test run: ``~/.cache/streaming-course/kafka_<scala>-<version>/`` (``$XDG_CACHE_HOME``
    is honoured; ``%LOCALAPPDATA%`` on Windows), or that subfolder inside the folder named
    by the environment variable ``STREAMING_COURSE_KAFKA_JARS``. Why not ``.runtime/``,
    where they used to be: the jars are the same for everyone, never change for a version
    and are not the learner's data; the test suite starts a broker of its own in a
    temporary folder, and must neither download 43 MB on every run nor write into the
    learner's ``.runtime/``. A user cache folder is the one place both can share, and
    deleting it only costs a new fetch (Ivy also keeps a copy in ~/.ivy2/cache, so even
    that takes seconds). A fetch takes a lock and ends with a rename, so two starts at
    once never mix their jars. (An old ``.runtime/kafka/lib`` is no longer read: delete it.)
  - Storage: ``kafka.tools.StorageTool format`` writes the KRaft metadata once
    (Kafka 4 has no ZooKeeper: the broker is its own controller).
  - Process: ``java kafka.Kafka server.properties`` with process.roles=broker,controller,
    listening on the loopback address only, single-replica internal topics, a 512 MB heap.
    Its logs go to ``.runtime/kafka/logs/server.log``, never to your terminal.

The broker's data, logs and configuration live under ``.runtime/kafka/`` (git-ignored):
``python local_kafka.py reset`` deletes the data and logs.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import shutil
import signal
import subprocess
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from common import config, paths
from common.config import SCALA_BINARY
from infra.environment import java_executable, require_java
from infra.errors import CourseError
from infra.kafka import answers, check_reachable, configured_bootstrap
from infra.kafka_security import security_for
from infra.processes import alive

KAFKA_VERSION = "4.4.0"
# A folder of your choice for the broker's jars, instead of the user cache folder (the course
# keeps them in a subfolder per Kafka version there, and never deletes anything else).
KAFKA_JARS_ENV = "STREAMING_COURSE_KAFKA_JARS"
# Kafka's pom brings log4j-api/log4j-core 2.25.5 but no SLF4J binding: without this
# one the broker would print "No SLF4J providers were found" and log nothing.
LOG4J_SLF4J_BINDING = ("org.apache.logging.log4j", "log4j-slf4j2-impl", "2.25.5")
NODE_ID = 1
HEAP = "512m"  # plenty for a course's topics; the laptop also runs Spark
START_TIMEOUT_SECONDS = 120.0
STOP_TIMEOUT_SECONDS = 30.0
DOWNLOAD_TIMEOUT_SECONDS = 900.0
PROBE_SECONDS = 3.0  # how long to wait for an answer to "are you Kafka?"

Say = Callable[[str], None]


def _print(text: str) -> None:
    print(text, flush=True)


def shared_jar_dir() -> Path:
    """The folder of the broker's jars: one per Kafka version, under STREAMING_COURSE_KAFKA_JARS or
    a user cache."""
    configured = os.environ.get(KAFKA_JARS_ENV, "").strip()
    base = Path(configured).expanduser().resolve() if configured else paths.user_cache_dir()
    return base / f"kafka_{SCALA_BINARY}-{KAFKA_VERSION}"


@dataclass(frozen=True)
class LocalBroker:
    """Where the course's broker listens and keeps its files (defaults: the learner's broker)."""

    host: str = config.LOCAL_KAFKA_HOST
    port: int = field(default_factory=config.local_kafka_port)
    controller_port: int = field(default_factory=config.local_kafka_controller_port)
    home: Path = field(default_factory=lambda: paths.RUNTIME_DIR / "kafka")
    lib_dir: Path = field(default_factory=shared_jar_dir)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def pid_file(self) -> Path:
        return self.home / "broker.pid"

    @property
    def server_log(self) -> Path:
        return self.log_dir / "server.log"

    @property
    def console_log(self) -> Path:
        return self.log_dir / "broker.out"  # what the JVM itself prints (crashes, bad options)


@dataclass(frozen=True)
class Status:
    broker: LocalBroker
    pid: int | None  # our broker's process, if it is alive
    answers: bool  # a Kafka broker answers on the port (ours or someone else's)

    def describe(self) -> str:
        where = (
            f"  bootstrap servers: {self.broker.bootstrap} (controller on port "
            f"{self.broker.controller_port})\n  data and logs:     "
            f"{paths.display(self.broker.home)}\n  jars:              {self.broker.lib_dir}"
        )
        if self.pid and self.answers:
            return f"The course's Kafka broker is running (PID {self.pid}).\n{where}"
        if self.pid:
            return (
                f"The course's Kafka broker process is alive (PID {self.pid}) but does not answer "
                f"yet.\n{where}"
            )
        if self.answers:
            return (
                f"A Kafka broker answers at {self.broker.bootstrap}, but it was not started from "
                f"this course folder (no {paths.display(self.broker.pid_file)}). Lessons will use "
                f"it.\n{where}"
            )
        return (
            "The course's Kafka broker is not running. "
            f"Start it with: python local_kafka.py start\n{where}"
        )


# --- status ------------------------------------------------------------------------------


def status(broker: LocalBroker) -> Status:
    return Status(broker, running_pid(broker), answers(broker.bootstrap, PROBE_SECONDS))


def running_pid(broker: LocalBroker) -> int | None:
    """Our broker's PID when its PID file names a live Kafka process; a stale file is removed."""
    try:
        pid = int(broker.pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    if _is_kafka_process(pid):
        return pid
    broker.pid_file.unlink(missing_ok=True)
    return None


def _is_kafka_process(pid: int) -> bool:
    """Alive and really a Kafka broker (after a reboot the number may belong to anything)."""
    if not alive(pid):
        return False
    try:
        command = (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:  # no /proc (macOS): ask ps
        result = subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True
        )
        command = result.stdout
    if not command.strip():
        return False  # a zombie: exited, not yet reaped
    return "kafka.Kafka" in command


# --- start -------------------------------------------------------------------------------


def start(
    broker: LocalBroker, *, say: Say = _print, timeout: float = START_TIMEOUT_SECONDS
) -> subprocess.Popen | None:
    """Start the broker and wait until it answers; None when one already runs there.

    Raises CourseError with advice for a busy port, a missing Java, a failed download
    or a broker that does not come up (with the tail of its log).
    """
    broker.home.mkdir(parents=True, exist_ok=True)
    with _start_lock(broker):
        if answers(broker.bootstrap, PROBE_SECONDS):
            pid = running_pid(broker)
            say(
                f"A Kafka broker already runs at {broker.bootstrap}"
                + (f" (PID {pid})." if pid else ".")
            )
            return None
        pid = running_pid(broker)
        if pid is not None:
            # Our process, alive, not answering: a start still in progress, or a broker that hangs.
            say(f"The course's broker (PID {pid}) is starting; waiting for it ...")
            _wait_until_ready(broker, None, timeout, pid=pid)
            return None
        _check_ports_free(broker)
        require_java()
        ensure_jars(broker, say=say)
        _write_config(broker)
        format_storage(broker, say=say)
        started = time.monotonic()
        process = _launch(broker)
        try:
            _wait_until_ready(broker, process, timeout)
        except BaseException:
            stop(broker, process=process)
            raise
        say(
            f"Kafka {KAFKA_VERSION} is up at {broker.bootstrap} (PID {process.pid}, "
            f"{time.monotonic() - started:.1f} s; logs in {paths.display(broker.log_dir)})."
        )
        return process


def _start_lock(broker: LocalBroker):
    """One start at a time per broker folder (two lessons started at once)."""
    return _file_lock(broker.home / "start.lock")


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; starts and fetches are rare enough
        yield
        return
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _check_ports_free(broker: LocalBroker) -> None:
    from infra.simulators import port_open

    for port, role, variable in (
        (broker.port, "client (PLAINTEXT)", config.LOCAL_KAFKA_PORT_ENV),
        (broker.controller_port, "controller", config.LOCAL_KAFKA_CONTROLLER_PORT_ENV),
    ):
        if port_open(broker.host, port):
            raise CourseError(
                f"Port {port} on {broker.host} is already in use by a program that is not a Kafka "
                f"broker, so the course's broker cannot use it as its {role} port. Find the "
                f"program with 'lsof -i :{port}' (or 'ss -ltnp | grep {port}') and stop it, or "
                f"give the broker other ports: {variable}={port + 10000} python local_kafka.py "
                f"start (and set the same variable when you run the lessons). To use a broker you "
                f"already run instead, set KAFKA_BOOTSTRAP_SERVERS=host:port."
            )


def _launch(broker: LocalBroker) -> subprocess.Popen:
    broker.log_dir.mkdir(parents=True, exist_ok=True)
    command = [
        java_executable() or "java",
        f"-Xmx{HEAP}",
        "-Xms128m",
        # A course broker carries a few thousand small messages: the quick (C1) compiler and
        # the serial collector suit it better than Kafka's server defaults (G1, C2). Measured
        # on 2 cores: 3.5 -> 2.0 CPU-s to start, 1.5 -> 1.1 CPU-s per idle minute, ready in
        # 3-4 s instead of 4.5 s (docs/BENCHMARKS.md). A production broker keeps Kafka's.
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        # C1 alone reserves 48 MB; the broker runs through a whole tour
        "-XX:ReservedCodeCacheSize=240m",
        "-Djava.awt.headless=true",
        f"-Dkafka.logs.dir={broker.log_dir}",
        f"-Dlog4j2.configurationFile={broker.home / 'log4j2.properties'}",
        "-cp",
        str(broker.lib_dir / "*"),
        "kafka.Kafka",
        str(broker.home / "server.properties"),
    ]
    with open(broker.console_log, "w", encoding="utf-8") as out:
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=broker.home,
            # Its own process group: a Ctrl-C in the lesson's terminal reaches the lesson,
            # which then stops the broker cleanly instead of killing it mid-write.
            start_new_session=True,
        )
    broker.pid_file.write_text(str(process.pid))
    return process


def _wait_until_ready(
    broker: LocalBroker, process: subprocess.Popen | None, timeout: float, *, pid: int | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        exited = (
            process.poll() is not None if process is not None else not _is_kafka_process(pid or -1)
        )
        if exited:
            raise CourseError(
                "The Kafka broker stopped while starting. The end of its log says:\n"
                f"{log_tail(broker)}\nIf the data folder is damaged, 'python local_kafka.py reset' "
                "deletes it (your topics too) so the next start formats a fresh one."
            )
        if answers(broker.bootstrap, 2.0):
            return
        time.sleep(0.5)  # polling a starting process, not a test oracle
    raise CourseError(
        f"The Kafka broker did not answer at {broker.bootstrap} within {timeout:.0f} s. The end of "
        f"its log says:\n{log_tail(broker)}\nOn a very busy machine try again with "
        "'python local_kafka.py start --timeout 300'."
    )


def log_tail(broker: LocalBroker, lines: int = 15) -> str:
    chunks = []
    for log in (broker.console_log, broker.server_log):
        try:
            text = log.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if text:
            tail = "\n".join("    " + line for line in text.splitlines()[-lines:])
            chunks.append(f"  {paths.display(log)}:\n{tail}")
    return "\n".join(chunks) or "  (the broker wrote no log)"


# --- jars ---------------------------------------------------------------------------------


def ivy_jar() -> Path:
    """The Apache Ivy jar that ships inside pyspark (Spark resolves --packages with it)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise CourseError(
            "pyspark is not installed in this Python, and the local Kafka broker fetches its jars "
            "with the Ivy resolver that ships inside pyspark. Run this with the course's Python: "
            "'.venv/bin/python local_kafka.py start' (run 'python course.py install' once to "
            "create it)."
        )
    jars = sorted((Path(spec.origin).parent / "jars").glob("ivy-*.jar"))
    if not jars:
        raise CourseError(
            f"No ivy-*.jar in {Path(spec.origin).parent / 'jars'}: reinstall pyspark (pip install "
            f"-r requirements.txt)."
        )
    return jars[-1]


def _wanted_modules() -> list[tuple[str, str, str]]:
    return [("org.apache.kafka", f"kafka_{SCALA_BINARY}", KAFKA_VERSION), LOG4J_SLF4J_BINDING]


def _stamp() -> str:
    return " ".join(":".join(module) for module in _wanted_modules())


def jars_ready(broker: LocalBroker) -> bool:
    stamp = broker.lib_dir / ".complete"
    return stamp.exists() and stamp.read_text().strip() == _stamp()


def ensure_jars(broker: LocalBroker, *, say: Say = _print) -> Path:
    """Fetch the broker's jars into the shared folder unless they are there already; return it."""
    if jars_ready(broker):
        return broker.lib_dir
    require_java()
    try:
        broker.lib_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CourseError(
            f"Cannot create {broker.lib_dir.parent} for the Kafka broker's jars "
            f"({error.strerror}). Set {KAFKA_JARS_ENV} to a folder you can write, "
            f"e.g. {KAFKA_JARS_ENV}=$HOME/kafka-jars (the same value for every course command)."
        ) from error
    # A lesson and a test run may start a broker at the same moment: one fetch at a time.
    with _file_lock(broker.lib_dir.with_name(broker.lib_dir.name + ".lock")):
        if not jars_ready(broker):  # another process may have fetched them while this one waited
            _fetch_jars(broker, say)
    return broker.lib_dir


def _fetch_jars(broker: LocalBroker, say: Say) -> None:
    broker.log_dir.mkdir(parents=True, exist_ok=True)
    partial = broker.lib_dir.with_name(broker.lib_dir.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    ivy_xml = broker.home / "ivy.xml"
    dependencies = "\n".join(
        f'    <dependency org="{org}" name="{name}" rev="{rev}" conf="default->default"/>'
        for org, name, rev in _wanted_modules()
    )
    ivy_xml.write_text(
        '<ivy-module version="2.0">\n'
        '  <info organisation="streaming-course" module="local-kafka"/>\n'
        f"  <dependencies>\n{dependencies}\n  </dependencies>\n</ivy-module>\n",
        encoding="utf-8",
    )
    say(
        f"Fetching the Kafka {KAFKA_VERSION} broker jars (once for all course folders: about 45 "
        "files, 43 MB from Maven Central; Ivy caches them in ~/.ivy2/cache) ..."
    )
    ivy_log = broker.log_dir / "ivy.log"
    started = time.monotonic()
    command = [
        java_executable() or "java",
        "-jar",
        str(ivy_jar()),
        "-ivy",
        str(ivy_xml),
        "-confs",
        "default",
        "-retrieve",
        f"{partial}/[artifact]-[revision](-[classifier]).[ext]",
    ]
    try:
        with open(ivy_log, "w", encoding="utf-8") as out:
            result = subprocess.run(
                command, stdout=out, stderr=subprocess.STDOUT, timeout=DOWNLOAD_TIMEOUT_SECONDS
            )
        failed = result.returncode != 0 or not list(partial.glob(f"kafka_{SCALA_BINARY}-*.jar"))
    except subprocess.TimeoutExpired:
        failed = True
    if failed:
        shutil.rmtree(partial, ignore_errors=True)
        raise CourseError(download_advice(broker, ivy_log))
    (partial / ".complete").write_text(_stamp() + "\n")
    shutil.rmtree(
        broker.lib_dir, ignore_errors=True
    )  # an incomplete folder from an interrupted fetch
    partial.rename(broker.lib_dir)
    jars = list(broker.lib_dir.glob("*.jar"))
    size = sum(jar.stat().st_size for jar in jars) / 1e6
    say(
        f"Fetched {len(jars)} jars ({size:.0f} MB) in {time.monotonic() - started:.0f} s into "
        f"{broker.lib_dir}."
    )


def download_advice(broker: LocalBroker, ivy_log: Path) -> str:
    try:
        lines = ivy_log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    words = ("UNRESOLVED", "FAILED", "not found", "Exception", "unknown")
    clues = [line.strip() for line in lines if any(word in line for word in words)]
    clue = f" Ivy said: {clues[0][:250]}" if clues else ""
    return (
        f"Could not download the Kafka {KAFKA_VERSION} broker jars. The first start of the "
        "course's own Kafka broker fetches them from Maven Central (about a minute, 43 MB); later "
        f"starts use the copy in {broker.lib_dir}. Check that this machine can reach Maven Central "
        "(behind a proxy, set JAVA_TOOL_OPTIONS='-Dhttps.proxyHost=HOST -Dhttps.proxyPort=PORT'), "
        "then retry with 'python local_kafka.py start'. Or skip the download: point "
        f"KAFKA_BOOTSTRAP_SERVERS at a Kafka broker you already run. "
        f"Full log: {paths.display(ivy_log)}.{clue}"
    )


# --- configuration and storage -------------------------------------------------------------


def server_properties(broker: LocalBroker) -> str:
    return f"""\
# Written by the course (infra/kafka_broker.py) on every start: edit that file, not this one.
# One JVM is both the KRaft controller (metadata) and the broker (data).
process.roles=broker,controller
node.id={NODE_ID}
controller.quorum.voters={NODE_ID}@{broker.host}:{broker.controller_port}
listeners=PLAINTEXT://{broker.host}:{broker.port},CONTROLLER://{broker.host}:{broker.controller_port}
# What clients are told to connect to: the same loopback address they used.
advertised.listeners=PLAINTEXT://{broker.host}:{broker.port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={broker.data_dir}
num.partitions=1
default.replication.factor=1
# One broker: every internal topic can only have one replica.
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
min.insync.replicas=1
# Consumers in a new group start at once instead of waiting 3 s for more members.
group.initial.rebalance.delay.ms=0
# A course keeps data for a week and at most ~1 GB per partition.
log.retention.hours=168
log.retention.bytes=1073741824
num.network.threads=2
num.io.threads=2
"""


LOG4J2_PROPERTIES = """\
# The broker logs to a file (rolled at 10 MB), never to the learner's terminal.
status = warn
appender.file.type = RollingFile
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.filePattern = ${sys:kafka.logs.dir}/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 10MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
"""


def _write_config(broker: LocalBroker) -> None:
    broker.home.mkdir(parents=True, exist_ok=True)
    (broker.home / "server.properties").write_text(server_properties(broker), encoding="utf-8")
    (broker.home / "log4j2.properties").write_text(LOG4J2_PROPERTIES, encoding="utf-8")


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 unpadded (as kafka-storage random-uuid).

    Like Kafka's own Uuid.randomUuid, never one that starts with '-': kafka-storage would read
    ``--cluster-id -x...`` as an unknown option and print its usage (1 start in 64 failed so).
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def format_storage(broker: LocalBroker, *, say: Say = _print) -> None:
    """Format the KRaft storage once; a formatted data folder is left alone."""
    if (broker.data_dir / "meta.properties").exists():
        return
    _write_config(broker)
    broker.data_dir.mkdir(parents=True, exist_ok=True)
    say(
        f"Formatting the broker's storage in {paths.display(broker.data_dir)} (first start only) "
        f"..."
    )
    command = [
        java_executable() or "java",
        "-Xmx256m",
        f"-Dkafka.logs.dir={broker.log_dir}",
        f"-Dlog4j2.configurationFile={broker.home / 'log4j2.properties'}",
        "-cp",
        str(broker.lib_dir / "*"),
        "kafka.tools.StorageTool",  # what bin/kafka-storage.sh runs
        "format",
        "--cluster-id",
        new_cluster_id(),
        "--config",
        str(broker.home / "server.properties"),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()[-8:]
        raise CourseError(
            "Kafka's StorageTool could not format the broker's data folder "
            f"{paths.display(broker.data_dir)}: {' | '.join(output)}. Delete it with "
            "'python local_kafka.py reset' and start again."
        )


# --- stop and reset ------------------------------------------------------------------------


def stop(
    broker: LocalBroker,
    *,
    process: subprocess.Popen | None = None,
    timeout: float = STOP_TIMEOUT_SECONDS,
) -> bool:
    """Stop our broker: SIGTERM (clean shutdown), then SIGKILL after ``timeout``. True if it ran."""
    pid = process.pid if process is not None else running_pid(broker)
    if pid is None or (process is not None and process.poll() is not None):
        broker.pid_file.unlink(missing_ok=True)
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    if not _wait_for_exit(pid, process, timeout):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _wait_for_exit(pid, process, 10)
    try:
        if broker.pid_file.read_text().strip() == str(pid):
            broker.pid_file.unlink()
    except OSError:
        pass
    return True


def _wait_for_exit(pid: int, process: subprocess.Popen | None, timeout: float) -> bool:
    if process is not None:  # our child: wait() also reaps it
        try:
            process.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _is_kafka_process(pid):
            return True
        time.sleep(0.2)
    return False


def reset(broker: LocalBroker) -> None:
    """Stop the broker and delete its data and logs (the jars stay)."""
    stop(broker)
    for folder in (broker.data_dir, broker.log_dir):
        shutil.rmtree(folder, ignore_errors=True)


# --- a broker for a lesson ------------------------------------------------------------------


@contextmanager
def kafka_for_lesson(*, quiet: bool = False) -> Iterator[str]:
    """Yield the bootstrap servers of a broker that answers; start the course's own if needed.

    1. KAFKA_BOOTSTRAP_SERVERS set: use that cluster (CourseError if it does not answer).
    2. A broker already answers on the local port (started by you, the tour or another
       lesson): use it and leave it running.
    3. Otherwise start the course's broker, say so, and stop it again on the way out.
    """
    show = (lambda text: None) if quiet else (lambda text: print(text, flush=True))
    configured = configured_bootstrap()
    if configured:
        check_reachable(configured)
        show(
            f"Using the Kafka cluster in KAFKA_BOOTSTRAP_SERVERS: "
            f"{configured}{security_for(configured).describe()}"
        )
        yield configured
        return
    broker = LocalBroker()
    if answers(broker.bootstrap):
        show(f"Using the Kafka broker already running at {broker.bootstrap}.")
        yield broker.bootstrap
        return
    show(
        f"No Kafka broker at {broker.bootstrap}: starting the course's own for this run "
        "('python local_kafka.py start' keeps one running between lessons) ..."
    )
    process = start(broker, say=show)
    try:
        yield broker.bootstrap
    finally:
        if process is not None:
            show("Stopping the Kafka broker this run started ...")
            stop(broker, process=process)

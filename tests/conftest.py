"""Fixtures shared by the whole suite: one Spark session, lesson loading, subprocess runs."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
import uuid
import warnings
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "streaming_tutorial"), str(ROOT)]
# The tests choose their own storage (COURSE_HOME, or --storage where a test says so): a
# learner's STREAMING_COURSE_STORAGE must not send the suite's checkpoints elsewhere.
os.environ.pop("STREAMING_COURSE_STORAGE", None)

from common.session import pin_time_zone  # noqa: E402
from infra.simulators import free_port  # noqa: E402,F401  (tests import it from here)

# Like every course process, the test run shows times in UTC whatever the machine's zone
# (TZ=Asia/Kolkata included): PySpark returns timestamps in the process's local zone.
pin_time_zone()

DAY = "2025-01-15"  # the day of every hand-made event (config.BASE_EVENT_TIME's)


def at(time_of_day: str) -> datetime:
    """'10:30:15' on the course's day, as PySpark returns a timestamp: a naive datetime in
    the process's zone (UTC, pinned above)."""
    moment = datetime.fromisoformat(f"{DAY}T{time_of_day}").replace(tzinfo=timezone.utc)
    return datetime.fromtimestamp(moment.timestamp())


def iso_at(time_of_day: str) -> str:
    """'10:30:15' -> '2025-01-15T10:30:15.000Z', the way the simulators write event times."""
    return f"{DAY}T{time_of_day}.000Z"


def shop_event(
    number: int,
    user: str,
    kind: str,
    time_of_day: str,
    *,
    product: str = "P001",
    name: str = "Coffee Maker",
    category: str = "Home",
    price: float = 10.0,
    quantity: int = 1,
) -> dict:
    """One shop event as generate_ecommerce_events.py writes it."""
    return {
        "event_id": f"EVT-{number:06d}",
        "user_id": user,
        "event_type": kind,
        "product_id": product,
        "product_name": name,
        "category": category,
        "price": price,
        "quantity": quantity,
        "timestamp": iso_at(time_of_day),
    }


def sensor_reading(
    reading_id: int,
    sensor: str,
    time_of_day: str,
    temperature: float = 21.0,
    humidity: float = 40.0,
) -> dict:
    """One sensor reading as generate_sensor_data.py writes it."""
    return {
        "reading_id": reading_id,
        "sensor_id": sensor,
        "temperature": temperature,
        "humidity": humidity,
        "event_time": iso_at(time_of_day),
    }


def load_lesson(stem: str):
    """Import a numbered lesson (e.g. '06_windowing') as a module; its main() does not run."""
    from common.paths import import_lesson

    return import_lesson(stem)


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run, with every connector the lessons use."""
    from common.session import get_spark

    session = get_spark(
        "course-tests", master="local[2]", kafka=True, delta=True, jdbc=True, ui=False
    )
    yield session
    session.stop()


@pytest.fixture
def course_home(tmp_path):
    """A throw-away COURSE_HOME for scripts run as subprocesses (data, checkpoints, output)."""
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture(autouse=True)
def lesson_checkpoints_inspected(request):
    """After a lesson's smoke run (tests/lessons, marked smoke), the checkpoint inspector
    (python course.py checkpoint) reads every checkpoint the lesson left in its course home:
    it must work on every lesson's checkpoints. Python only, the state left out: milliseconds."""
    yield
    home = request.node.funcargs.get("course_home")
    if home is None or not request.node.get_closest_marker("smoke"):
        return
    if "lessons" not in request.node.path.parts:
        return  # elsewhere, a course home may hold a checkpoint damaged on purpose
    from infra import checkpoints
    from teaching import inspect_checkpoint

    for checkpoint in checkpoints.find(home):
        lines = inspect_checkpoint.report(checkpoint, state=False).splitlines()
        query_id = json.loads((checkpoint / "metadata").read_text())["id"]
        assert f"  query id        {query_id}" in lines, lines
        assert not [text for text in lines if "unreadable" in text], lines
        # A lesson leaves a healthy checkpoint: infra.checkpoint_health (if any) finds nothing.
        damage = [text for text in lines if text.startswith("  damage")]
        assert damage in ([], ["  damage          none found"]), lines


def run_script(
    script: Path | str,
    *args: str,
    home: Path,
    timeout: float = 180,
    cwd: Path | None = None,
    input_text: str | None = None,
    env: dict | None = None,
) -> subprocess.CompletedProcess:
    """Run a course script as a learner would: a fresh Python process, outputs captured."""
    environment = {
        **os.environ,
        "STREAMING_COURSE_HOME": str(home),
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, str(ROOT / script), *args],
        cwd=cwd or ROOT,
        env=environment,
        input=input_text,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write_by_hand(writer, partition_id, epoch_id, rows, error=None):
    """What pyspark 4.2 does with a ForeachWriter in one task (DataStreamWriter.foreach,
    _construct_foreach_function): open(); process() each row only if open() returned true;
    close() with the error that stopped the rows, or None."""
    if writer.open(partition_id, epoch_id):
        for row in rows:
            writer.process(row)
    writer.close(error)


def prose(output: str) -> str:
    """A lesson's output with every run of whitespace made one space: the lessons wrap their
    paragraphs at 72 columns, so where a line breaks moves with the numbers in it."""
    return " ".join(output.split())


@pytest.fixture(scope="session")
def kafka_test_broker(tmp_path_factory):
    """The test run's own Kafka broker (a LocalBroker), or None when KAFKA_BOOTSTRAP_SERVERS is set.

    Started once, at the first test that needs Kafka, and stopped at the end of the session.
    Its data, logs and configuration live in a course home of its own under the run's
    temporary folder (``<tmp>/kafka-home/.runtime/kafka``: the layout local_kafka.py expects
    when STREAMING_COURSE_HOME points there), it listens on free ports, and it takes its
    jars from the folder shared by every run (infra/kafka_broker.py), so nothing is
    downloaded twice and nothing is written into the learner's ``.runtime/``.

    Why a broker of its own rather than test-only topic names on the learner's broker: a
    prefix would have to reach every topic name in every lesson and simulator (the lessons
    stay simpler without one), and even prefixed topics share the learner's data folder,
    logs and consumer groups, so a test run would still change the learner's files. A broker
    of our own costs one start per run (about 10 s) and leaves a broker the learner started
    running, with its data, whatever the tests do.
    """
    from common import config
    from infra import kafka_broker

    if os.environ.get(config.KAFKA_BOOTSTRAP_ENV, "").strip():
        yield None  # the user chose a cluster for the tests (the run's header says so)
        return
    port = free_port(config.LOCAL_KAFKA_HOST)
    controller_port = free_port(config.LOCAL_KAFKA_HOST)
    while controller_port == port:
        controller_port = free_port(config.LOCAL_KAFKA_HOST)
    home = tmp_path_factory.mktemp("kafka-home")
    broker = kafka_broker.LocalBroker(
        port=port, controller_port=controller_port, home=home / ".runtime" / "kafka"
    )
    started = time.monotonic()
    process = kafka_broker.start(broker, say=lambda text: None)
    assert process is not None, f"something else answered on the free port {port}"
    KAFKA_TEST_BROKER_STARTED["seconds"] = time.monotonic() - started
    try:
        yield broker
    finally:
        kafka_broker.stop(broker, process=process)


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_test_broker):
    """The bootstrap servers of the test run's Kafka: its own broker (kafka_test_broker), or the
    cluster in KAFKA_BOOTSTRAP_SERVERS when the user set it (then the tests create their topics
    there, and lesson 08's run writes to the lesson's own topic names).

    KAFKA_BOOTSTRAP_SERVERS is set for the session, so lessons and tools run as subprocesses
    use the same broker instead of looking for the learner's.
    """
    from common.config import KAFKA_BOOTSTRAP_ENV
    from infra.kafka import check_reachable
    from infra.kafka_security import set_variables

    if kafka_test_broker is None:
        bootstrap = os.environ[KAFKA_BOOTSTRAP_ENV].strip()
        check_reachable(bootstrap)
        yield bootstrap
        return
    os.environ[KAFKA_BOOTSTRAP_ENV] = kafka_test_broker.bootstrap
    # The learner's KAFKA_SECURITY_/SASL_/SSL_/OPTION_ variables describe their cluster, not this
    # plaintext broker.
    hidden = {name: os.environ.pop(name) for name in set_variables(os.environ)}
    try:
        yield kafka_test_broker.bootstrap
    finally:
        os.environ.pop(KAFKA_BOOTSTRAP_ENV, None)
        os.environ.update(hidden)


# --- Kafka topics and ports for tests -------------------------------------------------------------


@contextmanager
def silent_listener():
    """A port that accepts TCP connections and never answers: a program that is not Kafka."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@pytest.fixture
def topic(kafka_bootstrap):
    """topic("name") -> a Kafka topic name unique to this test; all of them are deleted
    afterwards."""
    from infra.kafka import delete_topics

    suffix = uuid.uuid4().hex[:8]
    made = []

    def make(name: str) -> str:
        made.append(f"test-{name}-{suffix}")
        return made[-1]

    yield make
    delete_topics(kafka_bootstrap, made)


def kafka_report_header() -> str:
    """One line at the top of the run: which Kafka the tests use."""
    from common.config import KAFKA_BOOTSTRAP_ENV

    configured = os.environ.get(KAFKA_BOOTSTRAP_ENV, "").strip()
    if configured:
        return (
            f"kafka: the tests use the cluster in {KAFKA_BOOTSTRAP_ENV}={configured} (set by you) "
            "and create their topics there; unset it to let them start a broker of their own"
        )
    return (
        "kafka: the tests start a broker of their own "
        "(free ports, data in the run's temporary folder)"
    )


# --- Two workers, one Spark session
# ----------------------------------------------------------------
#
# pytest.ini runs the suite on two pytest-xdist workers with --dist loadgroup. Every test that
# uses the in-process Spark session or the test broker is put in one group, so one worker
# holds the run's only SparkSession and broker; the other runs the lessons as subprocesses (the
# smoke runs), the simulators and the pure-Python tests meanwhile. A learner's lesson waits on
# triggers and simulators much of its time, so the two overlap well on two cores.
# The grouping needs pytest < 9.2 (see requirements.txt); the controller checks that it held.
JVM_FIXTURES = {"spark", "kafka_bootstrap", "kafka_test_broker", "topic"}
JVM_GROUP = "jvm"
CRASH_MARKER = "crash"  # the slow lane: kill -9 cycles, a broker outage (pytest.ini)
# The exercises' shipped mistakes, each checked for its hint: CI runs them beside the crash lane.
MISTAKES_MARKER = "mistakes"
# Mutants of the reference solutions, each checked (tests/test_mutants.py): all, or a fixed sample.
MUTANTS_MARKERS = ("mutants", "mutants_sample")
SLOW_LANES = (CRASH_MARKER, MISTAKES_MARKER, *MUTANTS_MARKERS)
jvm_test_workers: set[str] = set()  # on the controller: the workers that ran a test of the group


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the group into the node id
def pytest_collection_modifyitems(config, items):
    for item in items:
        if JVM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group(JVM_GROUP))
    leave_out_the_slow_lanes(config, items)


def leave_out_the_slow_lanes(config, items) -> None:
    """The slow lanes run only when an -m expression names them (``-m crash``, ``-m mistakes``).

    pytest.ini's ``-m "not crash"`` is replaced by any -m given on the command line (the last
    one wins), so ``python course.py test -m "not smoke"`` would otherwise run the lanes too.
    """
    for lane in SLOW_LANES:
        if re.search(rf"\b{lane}\b", config.option.markexpr or ""):
            continue
        slow = [item for item in items if item.get_closest_marker(lane)]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if not item.get_closest_marker(lane)]


def pytest_runtest_logreport(report):
    node = getattr(report, "node", None)  # set on the controller, for a report from a worker
    if node is not None and report.when == "call" and report.nodeid.endswith(f"@{JVM_GROUP}"):
        jvm_test_workers.add(node.workerinput["workerid"])


def grouping_problem(config) -> str | None:
    """Why the one-session grouping did not hold in this run, or None."""
    if getattr(config.option, "dist", "no") != "loadgroup" or len(jvm_test_workers) <= 1:
        return None
    return (
        f"the Spark and Kafka tests ran on {len(jvm_test_workers)} workers "
        f"({', '.join(sorted(jvm_test_workers))}), "
        "each with its own session: xdist_group did not group them. Check the pytest and "
        "pytest-xdist versions against requirements.txt."
    )


def pytest_report_header(config):
    return [kafka_report_header()]


# --- The learner's files: the test run must leave them as they were
# --------------------------------
#
# The learner's data/, checkpoints/, output/ and .runtime/ (and the topics of a broker they
# run) are listed before the run and again after the last fixture has been torn down; any
# difference fails the run and names the paths. The snapshot is taken at session start,
# before collection, so a lesson that wrote files on import would be caught too.
#
# The learner's own broker (python local_kafka.py start) may be running meanwhile, and it
# rewrites its own files by itself. Measured on an idle broker (Kafka 4.4, a minute): its
# metadata log (__cluster_metadata-0: a record every 500 ms, its index files), the
# *-checkpoint files beside the partitions (every minute), its data folder and logs/server.log.
# The partition folders of the learner's topics (<topic>-<n>) and their record files (*.log) did
# not change; a stop also rewrites their index and snapshot files. So of the broker's data only
# those are compared, and its topics with their end offsets (learner_kafka_topics), whether the
# broker runs or not: a test that writes to a learner's topic changes both.

LEARNER_FOLDERS = ("data", "checkpoints", "output", ".runtime")
# The project root; tests/common/test_isolation.py points an inner run at a copy to show the check
# fails.
LEARNER_ROOT = Path(os.environ.get("STREAMING_COURSE_TESTS_LEARNER_ROOT") or ROOT)
LEARNER_SNAPSHOT = pytest.StashKey[dict]()
LEARNER_CHANGES = pytest.StashKey[list]()
GROUPING_PROBLEM = pytest.StashKey[str]()
KAFKA_TEST_BROKER_STARTED: dict[str, float] = {}


KAFKA_DATA = ".runtime/kafka/data"  # the learner's broker's data (infra/kafka_broker.py)
KAFKA_LOGS = ".runtime/kafka/logs"
# A partition's folder in the broker's data: <topic>-<partition>. An internal topic's name starts
# with "__" (__cluster_metadata, __consumer_offsets); a deleted topic's folder is renamed to
# <topic>-<n>.<id>-delete and removed by the broker a minute later, which this pattern leaves out.
PARTITION_FOLDER = re.compile(r"(?!__)[^/]+-\d+")
RECORDS_SUFFIX = ".log"  # a partition's segment files: its records


def kafka_records_entry(relative: str, entry: tuple) -> tuple | None:
    """What the comparison keeps of a path under the learner's broker's data and logs folders:
    a learner topic's partition folder (that it is there) and its record files (as they are).
    None for the rest, the broker's own bookkeeping, which it rewrites by itself while it runs.
    Other paths are kept as they are."""
    if relative == KAFKA_LOGS or relative.startswith(KAFKA_LOGS + "/"):
        return None
    if not relative.startswith(KAFKA_DATA + "/"):
        return None if relative == KAFKA_DATA else entry
    parts = relative[len(KAFKA_DATA) + 1 :].split("/")
    if not PARTITION_FOLDER.fullmatch(parts[0]):
        return None
    if len(parts) == 1:
        return ("folder", 0, 0)  # its time changes when the broker rewrites a file inside
    if len(parts) == 2 and parts[1].endswith(RECORDS_SUFFIX):
        return entry
    return None


def snapshot_tree(root: Path, folders=LEARNER_FOLDERS) -> dict[str, tuple]:
    """{path relative to root: (kind, size, mtime in ns)} of every file and folder in ``folders``,
    the learner's broker's files reduced to its records (kafka_records_entry)."""
    entries = {}
    for name in folders:
        top = root / name
        for path in [top, *sorted(top.rglob("*"))] if top.exists() else []:
            relative = path.relative_to(root).as_posix()
            try:
                info = path.lstat()
            except FileNotFoundError:  # deleted while we looked: the next snapshot says so
                continue
            kind = "folder" if stat.S_ISDIR(info.st_mode) else "file"
            entry = (kind, info.st_size if kind == "file" else 0, info.st_mtime_ns)
            kept = kafka_records_entry(relative, entry)
            if kept is not None:
                entries[relative] = kept
    return entries


def changed_paths(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """'added/removed/changed <path>' for every entry that differs between two snapshots."""
    changes = []
    for path in sorted(before.keys() | after.keys()):
        if path not in after:
            changes.append(f"removed  {path}")
        elif path not in before:
            changes.append(f"added    {path}")
        elif before[path] != after[path]:
            changes.append(f"changed  {path}")
    return changes


def learner_kafka_topics() -> dict[str, tuple]:
    """The topics of a broker the learner runs on the course's port, with their end offsets.

    Empty when none answers, or when KAFKA_BOOTSTRAP_SERVERS is set (the tests then use that
    cluster on purpose).
    """
    from common import config
    from infra.simulators import port_open

    if os.environ.get(config.KAFKA_BOOTSTRAP_ENV, "").strip():
        return {}
    if not port_open(config.LOCAL_KAFKA_HOST, config.local_kafka_port()):
        return {}  # nothing listens: no need to load the Kafka client at all
    with (
        warnings.catch_warnings()
    ):  # kafka-python's import-time DeprecationWarnings (see the test modules)
        warnings.simplefilter("ignore", DeprecationWarning)
        from infra.kafka import answers, end_offsets, list_topics

        bootstrap = config.local_kafka_bootstrap()
        if not answers(bootstrap, timeout=3):
            return {}
        return {
            f"kafka://{bootstrap}/{name}": (
                "topic",
                tuple(sorted(end_offsets(bootstrap, name).items())),
                0,
            )
            for name in list_topics(bootstrap)
        }


def learner_snapshot() -> dict[str, tuple]:
    return {**snapshot_tree(LEARNER_ROOT), **learner_kafka_topics()}


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # under pytest-xdist, the controller checks
        session.config.stash[LEARNER_SNAPSHOT] = learner_snapshot()


@pytest.hookimpl(
    trylast=True
)  # after pytest's own teardown of what is left (e.g. after -x or Ctrl-C)
def pytest_sessionfinish(session, exitstatus):
    """Runs after every test and every fixture's teardown: compare the learner's files, and
    check that the Spark tests shared one session."""
    if not hasattr(session.config, "workerinput") and grouping_problem(session.config):
        session.config.stash[GROUPING_PROBLEM] = grouping_problem(session.config)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    before = session.config.stash.get(LEARNER_SNAPSHOT, None)
    if before is None:
        return
    changes = changed_paths(before, learner_snapshot())
    session.config.stash[LEARNER_CHANGES] = changes
    if changes and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if "seconds" in KAFKA_TEST_BROKER_STARTED:
        terminalreporter.write_line(
            f"kafka: the test run's own broker started in "
            f"{KAFKA_TEST_BROKER_STARTED['seconds']:.1f} s"
        )
    if config.stash.get(GROUPING_PROBLEM, None):
        terminalreporter.section(
            "FAILED: the tests did not share one Spark session", sep="!", red=True, bold=True
        )
        terminalreporter.write_line(config.stash[GROUPING_PROBLEM], red=True)
    changes = config.stash.get(LEARNER_CHANGES, [])
    if changes:
        terminalreporter.section(
            "FAILED: the test run changed the learner's files", sep="!", red=True, bold=True
        )
        terminalreporter.write_line(
            f"These paths under {LEARNER_ROOT} changed during the test run. Tests must write only "
            "into temporary folders and use their own Kafka broker (a lesson or simulator you ran "
            "meanwhile would explain it too):",
            red=True,
        )
        for line in changes[:50]:
            terminalreporter.write_line(f"  {line}", red=True)
        if len(changes) > 50:
            terminalreporter.write_line(f"  ... and {len(changes) - 50} more", red=True)

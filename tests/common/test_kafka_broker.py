"""The course's own Kafka broker: finding or starting one for a lesson, its jars, and
local_kafka.py.

The ``kafka_test_broker`` fixture (conftest.py) is the test run's own broker (None when the user
set KAFKA_BOOTSTRAP_SERVERS); ``kafka_bootstrap`` is its address; the ``topic`` fixture gives
every test topics with a fresh suffix and deletes them afterwards.
"""

from __future__ import annotations

import pytest

from common import config, paths, session
from conftest import ROOT, free_port, run_script, silent_listener
from infra import kafka_broker
from infra.errors import CourseError
from infra.kafka import answers, end_offsets
from infra.kafka_broker import kafka_for_lesson

HOST = config.LOCAL_KAFKA_HOST
# kafka-python 3.0 loads its protocol schemas with importlib.resources calls that Python 3.11
# deprecates.
pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


@pytest.fixture
def own_broker(kafka_test_broker):
    """The test run's own broker; tests that need its files or ports skip on a user's cluster."""
    if kafka_test_broker is None:
        pytest.skip(
            "the test run uses the Kafka cluster in KAFKA_BOOTSTRAP_SERVERS, not a broker of its "
            "own"
        )
    return kafka_test_broker


# --- a broker for a lesson ----------------------------------------------------------------------


def test_kafka_for_lesson_uses_kafka_bootstrap_servers_and_says_when_it_is_wrong(monkeypatch):
    monkeypatch.setenv(config.KAFKA_BOOTSTRAP_ENV, f"{HOST}:{free_port(HOST)}")
    with pytest.raises(CourseError, match="KAFKA_BOOTSTRAP_SERVERS is set to"):
        with kafka_for_lesson(quiet=True):
            pass


@pytest.mark.kafka
def test_kafka_for_lesson_reuses_the_running_broker(kafka_bootstrap, capsys):
    with kafka_for_lesson() as bootstrap:
        assert bootstrap == kafka_bootstrap
    assert "Using the Kafka cluster in KAFKA_BOOTSTRAP_SERVERS" in capsys.readouterr().out


@pytest.mark.kafka
def test_kafka_for_lesson_uses_a_broker_already_on_the_local_port_and_leaves_it_running(
    own_broker, monkeypatch, capsys
):
    monkeypatch.delenv(config.KAFKA_BOOTSTRAP_ENV, raising=False)
    monkeypatch.setenv(config.LOCAL_KAFKA_PORT_ENV, str(own_broker.port))
    with kafka_for_lesson() as bootstrap:
        assert bootstrap == own_broker.bootstrap
    assert (
        capsys.readouterr().out
        == f"Using the Kafka broker already running at {own_broker.bootstrap}.\n"
    )
    assert answers(own_broker.bootstrap)


@pytest.mark.kafka
def test_kafka_for_lesson_starts_a_broker_when_none_answers_and_stops_it_afterwards(
    monkeypatch, tmp_path, capsys
):
    # A course home of its own (like a learner's fresh checkout) and free ports.
    monkeypatch.delenv(config.KAFKA_BOOTSTRAP_ENV, raising=False)
    monkeypatch.setenv(config.LOCAL_KAFKA_PORT_ENV, str(free_port(HOST)))
    monkeypatch.setenv(config.LOCAL_KAFKA_CONTROLLER_PORT_ENV, str(free_port(HOST)))
    monkeypatch.setattr(paths, "RUNTIME_DIR", tmp_path / ".runtime")
    with kafka_for_lesson() as bootstrap:
        assert bootstrap == config.local_kafka_bootstrap()
        assert answers(bootstrap)
        assert (tmp_path / ".runtime" / "kafka" / "data" / "meta.properties").exists()
    assert not answers(bootstrap)
    assert not (tmp_path / ".runtime" / "kafka" / "broker.pid").exists()
    out = capsys.readouterr().out
    assert f"No Kafka broker at {bootstrap}: starting the course's own for this run" in out
    assert "Stopping the Kafka broker this run started" in out


# --- where the broker keeps its files -----------------------------------------------------------


def test_the_jars_live_in_one_folder_per_version_outside_every_course_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(kafka_broker.KAFKA_JARS_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    version_folder = f"kafka_{config.SCALA_BINARY}-{kafka_broker.KAFKA_VERSION}"
    assert kafka_broker.shared_jar_dir() == tmp_path / "cache" / "streaming-course" / version_folder
    monkeypatch.setenv(kafka_broker.KAFKA_JARS_ENV, str(tmp_path / "mine"))
    assert kafka_broker.shared_jar_dir() == tmp_path / "mine" / version_folder
    assert kafka_broker.LocalBroker().lib_dir == tmp_path / "mine" / version_folder


def test_the_broker_and_the_spark_connector_use_the_same_scala_build():
    assert kafka_broker.SCALA_BINARY is session.SCALA_BINARY is config.SCALA_BINARY
    assert ("org.apache.kafka", f"kafka_{config.SCALA_BINARY}", kafka_broker.KAFKA_VERSION) in (
        kafka_broker._wanted_modules()
    )
    assert f"spark-sql-kafka-0-10_{config.SCALA_BINARY}:" in session.kafka_package()


@pytest.mark.kafka
def test_the_test_runs_broker_keeps_its_files_in_the_runs_temporary_folder(
    own_broker, tmp_path_factory
):
    temporary = tmp_path_factory.getbasetemp()
    assert temporary in own_broker.home.parents and ROOT not in own_broker.home.parents
    assert (own_broker.data_dir / "meta.properties").exists() and own_broker.server_log.exists()
    assert kafka_broker.jars_ready(own_broker) and ROOT not in own_broker.lib_dir.parents
    assert own_broker.port != config.DEFAULT_LOCAL_KAFKA_PORT


# --- local_kafka.py
# ---------------------------------------------------------------------------------


@pytest.mark.kafka
@pytest.mark.smoke
def test_local_kafka_topics_lists_and_creates(kafka_bootstrap, topic, course_home):
    name = topic("cli")
    result = run_script(
        "local_kafka.py",
        "topics",
        "--create",
        name,
        "--partitions",
        "2",
        home=course_home,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"Topics at {kafka_bootstrap}" in result.stdout and f"  {name}\n" in result.stdout
    assert sorted(end_offsets(kafka_bootstrap, name)) == [0, 1]


@pytest.mark.kafka
@pytest.mark.smoke
def test_local_kafka_status_describes_the_broker(own_broker, course_home):
    # The test broker's home is <tmp>/kafka-home/.runtime/kafka: the layout of a course home.
    ports = ("--port", str(own_broker.port), "--controller-port", str(own_broker.controller_port))
    result = run_script(
        "local_kafka.py", "status", *ports, home=own_broker.home.parents[1], timeout=60
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert (
        f"The course's Kafka broker is running (PID {kafka_broker.running_pid(own_broker)})"
        in result.stdout
    )
    assert f"bootstrap servers: {own_broker.bootstrap}" in result.stdout
    assert f"jars:              {own_broker.lib_dir}" in result.stdout

    # Another course home, same port: a broker answers there, but that home did not start it.
    elsewhere = run_script("local_kafka.py", "status", *ports, home=course_home, timeout=60)
    assert (
        f"A Kafka broker answers at {own_broker.bootstrap}, but it was not started from this"
        in " ".join(elsewhere.stdout.split())
    )
    nothing = run_script(
        "local_kafka.py", "status", "--port", str(free_port(HOST)), home=course_home, timeout=60
    )
    assert "The course's Kafka broker is not running" in nothing.stdout


@pytest.mark.smoke
def test_local_kafka_start_explains_a_port_held_by_another_program(course_home):
    with silent_listener() as port:
        result = run_script(
            "local_kafka.py",
            "start",
            "--port",
            str(port),
            "--controller-port",
            str(free_port(HOST)),
            home=course_home,
            timeout=90,
        )
    assert result.returncode == 1
    assert (
        f"Port {port} on {HOST} is already in use by a program that is not a Kafka broker"
        in " ".join(result.stderr.split())
    )
    assert "LOCAL_KAFKA_PORT=" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.smoke
def test_local_kafka_start_explains_a_failed_download(course_home, tmp_path):
    # An empty jar folder, an empty Ivy cache (another user.home) and a proxy that refuses: the jars
    # cannot come.
    java_options = (
        f"-Duser.home={tmp_path / 'empty-home'} -Dhttps.proxyHost={HOST} -Dhttps.proxyPort=1 "
        f"-Dhttp.proxyHost={HOST} -Dhttp.proxyPort=1"
    )
    jars = tmp_path / "jars"
    result = run_script(
        "local_kafka.py",
        "start",
        "--port",
        str(free_port(HOST)),
        "--controller-port",
        str(free_port(HOST)),
        home=course_home,
        timeout=300,
        env={"JAVA_TOOL_OPTIONS": java_options, kafka_broker.KAFKA_JARS_ENV: str(jars)},
    )
    assert result.returncode == 1
    message = " ".join(result.stderr.split())
    assert f"Could not download the Kafka {kafka_broker.KAFKA_VERSION} broker jars" in message
    assert (
        "Maven Central" in message
        and "KAFKA_BOOTSTRAP_SERVERS" in message
        and "Traceback" not in message
    )
    assert [path.name for path in jars.iterdir()] == [
        f"kafka_{config.SCALA_BINARY}-{kafka_broker.KAFKA_VERSION}.lock"
    ]
    assert not (
        course_home / ".runtime" / "kafka" / "lib"
    ).exists()  # no half-filled folder is left


@pytest.mark.smoke
def test_local_kafka_start_without_java_says_how_to_install_it(course_home):
    result = run_script(
        "local_kafka.py",
        "start",
        "--port",
        str(free_port(HOST)),
        "--controller-port",
        str(free_port(HOST)),
        home=course_home,
        timeout=60,
        env={"PATH": "/nonexistent", "JAVA_HOME": ""},
    )
    assert result.returncode == 1
    assert "Java was not found" in result.stderr and "Traceback" not in result.stderr


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch):
    # 0xf8 as the first byte encodes to '-' in URL-safe base64: kafka-storage then took the id
    # for an option and failed with its usage text.
    import uuid

    from infra import kafka_broker

    ids = iter(
        [uuid.UUID(bytes=bytes([0xF8]) + bytes(15)), uuid.UUID(bytes=bytes([0x10]) + bytes(15))]
    )
    monkeypatch.setattr(kafka_broker.uuid, "uuid4", lambda: next(ids))

    cluster_id = kafka_broker.new_cluster_id()

    assert not cluster_id.startswith("-")
    assert len(cluster_id) == 22

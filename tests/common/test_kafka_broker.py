"""The course's own Kafka broker: finding or starting one for a lesson, and local_kafka.py.

The ``kafka_bootstrap`` fixture (conftest.py) provides the test run's own broker; the ``topic`` fixture
gives every test topics with a fresh suffix and deletes them afterwards.
"""

from __future__ import annotations

import pytest

from common import config, paths
from common.errors import CourseError
from common.kafka import end_offsets
from common.kafka_broker import kafka_for_lesson
from conftest import free_port, run_script, silent_listener

# kafka-python 3.0 loads its protocol schemas with importlib.resources calls that Python 3.11 deprecates.
pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


# --- a broker for a lesson ----------------------------------------------------------------------


def test_kafka_for_lesson_uses_kafka_bootstrap_servers_and_says_when_it_is_wrong(monkeypatch):
    monkeypatch.setenv(config.KAFKA_BOOTSTRAP_ENV, f"127.0.0.1:{free_port()}")
    with pytest.raises(CourseError, match="KAFKA_BOOTSTRAP_SERVERS is set to"):
        with kafka_for_lesson(quiet=True):
            pass


@pytest.mark.kafka
def test_kafka_for_lesson_reuses_the_running_broker(kafka_bootstrap, capsys):
    with kafka_for_lesson() as bootstrap:
        assert bootstrap == kafka_bootstrap
    assert "Using the Kafka cluster in KAFKA_BOOTSTRAP_SERVERS" in capsys.readouterr().out



# --- local_kafka.py ---------------------------------------------------------------------------------


@pytest.mark.kafka
@pytest.mark.smoke
def test_local_kafka_topics_lists_and_creates(kafka_bootstrap, topic, course_home):
    name = topic("cli")
    result = run_script("local_kafka.py", "topics", "--create", name, "--partitions", "2", home=course_home, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"Topics at {kafka_bootstrap}" in result.stdout and f"  {name}\n" in result.stdout
    assert sorted(end_offsets(kafka_bootstrap, name)) == [0, 1]


@pytest.mark.kafka
@pytest.mark.smoke
def test_local_kafka_status_describes_the_broker(kafka_bootstrap, course_home):
    if kafka_bootstrap != local_bootstrap():
        pytest.skip("the test run uses a Kafka cluster from KAFKA_BOOTSTRAP_SERVERS, not the local broker")
    result = run_script("local_kafka.py", "status", home=paths.COURSE_HOME, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"bootstrap servers: {kafka_bootstrap}" in result.stdout
    assert "is running (PID" in result.stdout or "answers at" in result.stdout

    elsewhere = run_script("local_kafka.py", "status", "--port", str(free_port()), home=course_home, timeout=60)
    assert "The course's Kafka broker is not running" in elsewhere.stdout


@pytest.mark.smoke
def test_local_kafka_start_explains_a_port_held_by_another_program(course_home):
    with silent_listener() as port:
        result = run_script("local_kafka.py", "start", "--port", str(port), "--controller-port", str(free_port()),
                            home=course_home, timeout=90)
    assert result.returncode == 1
    assert f"Port {port} on 127.0.0.1 is already in use by a program that is not a Kafka broker" in " ".join(
        result.stderr.split())
    assert "LOCAL_KAFKA_PORT=" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.smoke
def test_local_kafka_start_explains_a_failed_download(course_home, tmp_path):
    # An empty Ivy cache (another user.home) and a proxy that refuses: the jars cannot come.
    java_options = (f"-Duser.home={tmp_path / 'empty-home'} -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=1 "
                    "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=1")
    result = run_script("local_kafka.py", "start", "--port", str(free_port()), "--controller-port", str(free_port()),
                        home=course_home, timeout=300, env={"JAVA_TOOL_OPTIONS": java_options})
    assert result.returncode == 1
    message = " ".join(result.stderr.split())
    assert "Could not download the Kafka 4.4.0 broker jars" in message and "Maven Central" in message
    assert "KAFKA_BOOTSTRAP_SERVERS" in message and "Traceback" not in message
    assert not (course_home / ".runtime" / "kafka" / "lib").exists()  # no half-filled folder is left


@pytest.mark.smoke
def test_local_kafka_start_without_java_says_how_to_install_it(course_home):
    result = run_script("local_kafka.py", "start", "--port", str(free_port()), "--controller-port", str(free_port()),
                        home=course_home, timeout=60, env={"PATH": "/nonexistent", "JAVA_HOME": ""})
    assert result.returncode == 1
    assert "Java was not found" in result.stderr and "Traceback" not in result.stderr



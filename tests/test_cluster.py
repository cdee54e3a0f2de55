"""The same lessons on a real Spark standalone cluster: started, used by a stateful lesson and by a
Kafka lesson through spark-submit, and stopped with nothing left behind.

The cluster runs from the CLI a learner uses (python -m tools.cluster, which course.py calls), on
loopback and free ports, with its files in a temporary course home. These runs are also the smoke
runs of lessons 08 and 12 (a local run of each would repeat what they check).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from common import config, session
from conftest import ROOT, free_port, load_lesson, run_script, silent_listener
from infra.kafka import end_offsets, ensure_topics
from infra.processes import group_members
from tools import cluster as standalone

pytestmark = pytest.mark.xdist_group(
    "jvm"
)  # the Kafka run needs the test broker, which lives on that worker

PACKAGES = session.kafka_package()


cluster_cli = standalone.run_cli


def master_json(cluster: dict) -> dict:
    """The master's own view (tools.cluster.master_state), which must answer."""
    state = standalone.master_state(cluster["spec"], timeout=10)
    assert state is not None, f"the master's UI at {cluster['ui']} does not answer"
    return state


def assert_executors_keep_the_jvm_defaults(cluster: dict) -> None:
    """Every executor the worker started kept the JVM's own compiler and collector: the driver's
    quick compiler is for a lesson's one-minute JVM (common.session.executor_java_options).

    The worker writes each executor's command at the top of its stderr, and the JVM adds there
    any options it picked up from the environment (JAVA_TOOL_OPTIONS...).
    """
    logs = list((cluster["home"] / ".runtime/spark/work").glob("app-*/*/stderr"))
    assert logs, "the worker kept no executor log"
    for log in logs:
        text = log.read_text(encoding="utf-8", errors="replace")
        command = next(line for line in text.splitlines() if line.startswith("Spark Executor"))
        assert "-Dlog4j2.configurationFile=" in command  # the course's logging, nothing else
        jvm_flags = set(re.findall(r"-XX:[+-]?(\w+)", text))
        assert not jvm_flags & {"TieredStopAtLevel", "UseParallelGC", "ReservedCodeCacheSize"}, (
            command
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone master and a 2-core worker on loopback, started as a learner starts them."""
    home = tmp_path_factory.mktemp("cluster-home")
    port, ui, worker_ui = free_port(), free_port(), free_port()
    started = cluster_cli(
        "start",
        "--port",
        str(port),
        "--webui-port",
        str(ui),
        "--worker-webui-port",
        str(worker_ui),
        "--cores",
        "2",
        "--memory",
        "1g",
        home=home,
    )
    assert started.returncode == 0, started.stdout + started.stderr
    yield {
        "home": home,
        "url": f"spark://127.0.0.1:{port}",
        "ui": f"http://127.0.0.1:{ui}",
        "out": started.stdout,
        "spec": standalone.Cluster(port, ui, worker_ui, cores=2, memory="1g"),
    }
    cluster_cli("stop", home=home)  # again, if the last test did not get that far


def test_start_reports_the_master_url_and_the_uis(cluster):
    assert (
        f"master URL:  {cluster['url']}" in cluster["out"]
        and f"master UI:   {cluster['ui']}" in cluster["out"]
    )
    state = master_json(cluster)
    assert [(worker["state"], worker["cores"]) for worker in state["workers"]] == [("ALIVE", 2)]
    assert "2 cores (0 in use)" in cluster_cli("status", home=cluster["home"]).stdout


@pytest.mark.smoke
def test_a_stateful_lesson_runs_on_the_cluster_with_the_same_results(cluster, course_home):
    assert run_script("initial_setup.py", "--sample-data", home=course_home).returncode == 0

    result = run_script(
        "streaming_tutorial/12_stateful_processing.py",
        "--master",
        cluster["url"],
        "--available-now",
        home=course_home,
        timeout=300,
    )

    assert result.returncode == 0, result.stderr[-3000:]
    out = " ".join(result.stdout.split())
    assert "grouped.mapGroupsWithState exists in PySpark: False" in out
    # The five sample files, one per micro-batch, then the batch the watermark adds: what a local
    # run prints.
    assert (
        "After 6 micro-batches the state store keeps 14 open users; 13 were closed by the timeout"
        in out
    ), out[-2000:]
    assert "|USER-2011|closed|6 |1 |749.97 |2025-01-15 10:32:23|" in out
    assert re.search(
        r"Lines quarantined with their reason in \S+/output/"
        r"12_stateful_processing/quarantine: none",
        out,
    )
    # It ran on the cluster's executor, and its shuffle partitions follow the cluster's 2 cores.
    apps = master_json(cluster)["completedapps"]
    assert [
        (app["name"], app["cores"]) for app in apps if app["name"] == "12_stateful_processing"
    ] == [("12_stateful_processing", 2)]
    offsets = (course_home / "checkpoints/12_stateful_processing/user_state/offsets/0").read_text()
    assert '"spark.sql.shuffle.partitions":"2"' in offsets
    assert_executors_keep_the_jvm_defaults(cluster)


@pytest.mark.smoke
def test_a_kafka_lesson_runs_through_spark_submit_on_the_cluster(
    cluster, kafka_bootstrap, course_home
):
    from data_generators import kafka_producer

    lesson = load_lesson("08_kafka_streaming")
    ensure_topics(kafka_bootstrap, [config.TOPIC_EVENTS], partitions=lesson.PARTITIONS)
    assert sum(end_offsets(kafka_bootstrap, config.TOPIC_EVENTS).values()) == 0, (
        "the test run's broker is fresh"
    )
    kafka_producer.send_messages(
        kafka_bootstrap,
        kafka_producer.build_messages(
            "ecommerce", 60, base_time=config.BASE_EVENT_TIME, malformed_every=20
        ),
    )  # messages 20, 40 and 60 are cut in half
    spark_submit = str(
        Path(sys.executable).with_name("spark-submit")
    )  # the venv's, from the pyspark package
    submit = [
        spark_submit,
        "--master",
        cluster["url"],
        "--packages",
        PACKAGES,
        # The driver's JVM runs before the lesson's Python: the course's JVM options go here
        # (README).
        "--driver-java-options",
        " ".join(session.DRIVER_JAVA_OPTIONS),
        str(ROOT / "streaming_tutorial/08_kafka_streaming.py"),
        "--available-now",
        "--no-simulator",
    ]

    result = subprocess.run(
        submit,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **os.environ,
            "STREAMING_COURSE_HOME": str(course_home),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1",
        },
    )

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert f"Using the Kafka cluster in KAFKA_BOOTSTRAP_SERVERS: {kafka_bootstrap}" in out
    assert (
        "  startingOffsets=latest   -> rows read: 0\n  startingOffsets=earliest -> rows read: 60\n"
        in out
    )
    assert "|event_id  |user_id  |event_type|revenue|partition|offset|" in out
    assert "The pipeline read 60 messages in 1 micro-batch of at most 100" in out
    assert f"'{config.TOPIC_ENRICHED}': 57 records, 57 distinct event_id\n" in out
    assert (
        f"'{config.TOPIC_QUARANTINE}': 3 records" in out and out.count("|not a JSON object|") == 3
    )
    # spark-submit resolved the connector (its --packages); the lesson's session did not resolve it
    # again.
    assert result.stderr.count(":: resolving dependencies ::") == 1
    assert any(app["name"] == "08_kafka_streaming" for app in master_json(cluster)["completedapps"])
    assert_executors_keep_the_jvm_defaults(cluster)  # spark-submit's executors too


def test_stop_leaves_no_process_behind(cluster):
    runtime = cluster["home"] / ".runtime" / "spark"
    pids = {role: int((runtime / f"{role}.pid").read_text()) for role in ("master", "worker")}
    assert all(group_members(pid) for pid in pids.values())

    stopped = cluster_cli("stop", home=cluster["home"])

    assert stopped.returncode == 0 and "Stopped the course's Spark cluster." in stopped.stdout
    assert {role: group_members(pid) for role, pid in pids.items()} == {"master": [], "worker": []}
    assert "is not running" in cluster_cli("status", home=cluster["home"]).stdout


# --- what a session does differently on a cluster: pure functions, no JVM
# --------------------------


@pytest.mark.parametrize(
    "master, local, here",
    [
        ("local[*]", True, True),
        ("local[2]", True, True),
        ("spark://127.0.0.1:7077", False, True),
        ("spark://localhost:7077", False, True),
        ("spark://spark-master.example:7077", False, False),
        ("yarn", False, False),
        ("k8s://https://10.0.0.1:6443", False, False),
    ],
)
def test_the_driver_binds_to_loopback_only_when_the_master_is_on_this_machine(master, local, here):
    assert (session.is_local(master), session.on_this_machine(master)) == (local, here)


def test_executors_get_the_course_logging_but_not_the_drivers_quick_compiler():
    assert "-XX:TieredStopAtLevel=1" in session.DRIVER_JAVA_OPTIONS  # the driver's, for a lesson
    here = session.executor_java_options(here=True)
    assert here == f"-Dlog4j2.configurationFile={session.LOG4J_CONFIG.as_uri()}"
    assert session.executor_java_options(here=False) == ""  # a remote worker cannot read the file


def test_spark_submit_without_the_lessons_packages_gets_the_exact_flag():
    delta = session.delta_package()
    assert session.missing_packages({"spark.jars.packages": PACKAGES}, [PACKAGES]) == []
    assert (
        session.missing_packages(
            {"spark.jars": "/jars/org.apache.spark_spark-sql-kafka-0-10_2.13-4.2.0.jar"}, [PACKAGES]
        )
        == []
    )  # given as --jars instead
    assert session.missing_packages({"spark.jars.packages": PACKAGES}, [PACKAGES, delta]) == [delta]
    advice = session.packages_advice([delta], [PACKAGES, delta])
    assert f"spark-submit --packages {PACKAGES},{delta} ..." in advice


def test_start_refuses_a_busy_port_with_the_ports_to_use_instead(tmp_path):
    with silent_listener() as port:
        result = cluster_cli(
            "start",
            "--port",
            str(port),
            "--webui-port",
            str(free_port()),
            "--worker-webui-port",
            str(free_port()),
            home=tmp_path,
        )
    assert result.returncode == 1
    assert f"Port(s) {port} on 127.0.0.1 are in use by another program" in result.stderr
    suggested = re.search(
        r"cluster start --port (\d+) --webui-port (\d+) --worker-webui-port (\d+)", result.stderr
    )
    assert suggested and port not in map(int, suggested.groups())
    assert not (tmp_path / ".runtime/spark/master.pid").exists()

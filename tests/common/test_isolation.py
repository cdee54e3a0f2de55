"""The check that the test run leaves the learner's files alone (conftest.py, last section) can
fail.

The run compares snapshots of the learner's data/, checkpoints/, output/ and .runtime/ taken
before and after it; these tests show the comparison sees an added, a changed and a removed
file, and that a run which writes into the learner's folders really ends as failed. Beside a
broker the learner runs, a run that leaves its topics alone passes although the broker rewrites
its own files meanwhile, and a run that writes to one of its topics fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from conftest import LEARNER_FOLDERS, ROOT, changed_paths, snapshot_tree

OLD = 1_700_000_000_000_000_000  # a fixed modification time (ns), long before any test runs


def write(path, text: str, mtime_ns: int = OLD) -> None:
    """A file with a chosen modification time, so no test depends on the clock's resolution."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def age_folders(root) -> None:
    """Give every folder under ``root`` the fixed old time: a later change inside is then always
    visible."""
    for folder in [path for path in root.rglob("*") if path.is_dir()]:
        os.utime(folder, ns=(OLD, OLD))


def test_an_untouched_tree_has_no_differences(tmp_path):
    write(tmp_path / "data" / "input" / "batch-1.json", "{}\n")
    write(tmp_path / "checkpoints" / "08" / "offsets" / "0", "v1\n")
    assert changed_paths(snapshot_tree(tmp_path), snapshot_tree(tmp_path)) == []


def test_the_diff_names_every_added_changed_and_removed_path(tmp_path):
    write(tmp_path / "data" / "input" / "batch-1.json", "{}\n")
    write(tmp_path / "data" / "input" / "batch-2.json", "{}\n")
    write(tmp_path / "checkpoints" / "08" / "offsets" / "0", "v1\n")
    write(tmp_path / ".runtime" / "kafka" / "broker.pid", "123")
    age_folders(tmp_path)
    before = snapshot_tree(tmp_path)
    assert sorted(before) == [
        ".runtime",
        ".runtime/kafka",
        ".runtime/kafka/broker.pid",
        "checkpoints",
        "checkpoints/08",
        "checkpoints/08/offsets",
        "checkpoints/08/offsets/0",
        "data",
        "data/input",
        "data/input/batch-1.json",
        "data/input/batch-2.json",
    ]

    write(
        tmp_path / "data" / "input" / "batch-1.json", "{}\n", mtime_ns=OLD + 1
    )  # same size, rewritten
    write(tmp_path / ".runtime" / "kafka" / "broker.pid", "12345")  # same time, new size
    (tmp_path / "checkpoints" / "08" / "offsets" / "0").unlink()
    write(tmp_path / "output" / "result.csv", "a,b\n")

    assert changed_paths(before, snapshot_tree(tmp_path)) == [
        "changed  .runtime/kafka/broker.pid",
        "changed  checkpoints/08/offsets",  # a file disappeared from it
        "removed  checkpoints/08/offsets/0",
        "changed  data/input/batch-1.json",
        "added    output",
        "added    output/result.csv",
    ]


def test_other_folders_are_not_compared(tmp_path):
    write(tmp_path / "notebooks" / "mine.ipynb", "{}")
    before = snapshot_tree(tmp_path)
    write(tmp_path / "notebooks" / "mine.ipynb", "{ }")
    assert "notebooks" not in LEARNER_FOLDERS
    assert changed_paths(before, snapshot_tree(tmp_path)) == []


def test_of_the_learners_broker_only_its_topics_records_are_compared(tmp_path):
    data = tmp_path / ".runtime" / "kafka" / "data"
    # What a running broker rewrote by itself in a minute, idle (measured: conftest.py).
    bookkeeping = [
        data / "__cluster_metadata-0" / "00000000000000000000.log",
        data / "__cluster_metadata-0" / "00000000000000000000.index",
        data / "__consumer_offsets-3" / "00000000000000000000.log",
        data / "replication-offset-checkpoint",
        data / "events-0" / "00000000000000000000.timeindex",
        data / "events-0" / "leader-epoch-checkpoint",
        data / "old-0.5c1f0e-delete" / "00000000000000000000.log",  # a deleted topic's
        tmp_path / ".runtime" / "kafka" / "logs" / "server.log",
    ]
    records = data / "events-0" / "00000000000000000000.log"
    for path in [*bookkeeping, records]:
        write(path, "x")
    age_folders(tmp_path)
    before = snapshot_tree(tmp_path)

    for path in bookkeeping:
        write(path, "xyz", mtime_ns=OLD + 1)
    (data / "old-0.5c1f0e-delete" / "00000000000000000000.log").unlink()
    write(data / "events-0" / "00000000000000000005.snapshot", "s")  # the folder's time moves
    assert changed_paths(before, snapshot_tree(tmp_path)) == []

    write(records, "x + one record")  # what a test writing to the learner's topic does
    write(data / "orders-0" / "00000000000000000000.log", "x")  # and one creating a topic
    assert changed_paths(before, snapshot_tree(tmp_path)) == [
        "changed  .runtime/kafka/data/events-0/00000000000000000000.log",
        "added    .runtime/kafka/data/orders-0",
        "added    .runtime/kafka/data/orders-0/00000000000000000000.log",
    ]


def run_inner_pytest(
    tmp_path, test_source: str, learner, env: dict | None = None
) -> subprocess.CompletedProcess:
    """An inner pytest run of one test file, with the suite's conftest as a plugin, whose "learner's
    folder" is ``learner`` (STREAMING_COURSE_TESTS_LEARNER_ROOT)."""
    inner = tmp_path / "inner"
    write(inner / "test_inner.py", test_source)
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "tests"),
        "STREAMING_COURSE_TESTS_LEARNER_ROOT": str(learner),
        **(env or {}),
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "conftest",
            "-p",
            "no:cacheprovider",
            f"--basetemp={tmp_path / 'tmp'}",
            f"--rootdir={inner}",
            str(inner / "test_inner.py"),
            "-q",
        ],
        cwd=inner,
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )


def reported_changes(output: str) -> list[str]:
    """The paths the failed check names, as it prints them."""
    return [
        line.strip()
        for line in output.splitlines()
        if line.startswith(("  added ", "  changed ", "  removed "))
    ]


def test_a_run_that_changes_the_learners_files_fails_and_names_them(tmp_path):
    # Its one test writes a file into the copy, as a careless test would into the real folder.
    learner = tmp_path / "learner"
    write(learner / "data" / "input" / "batch-1.json", "{}\n")
    age_folders(learner)
    careless = (
        "from conftest import LEARNER_ROOT\n\n\ndef test_careless():\n    (LEARNER_ROOT / 'data' / "
        "'left-by-a-test.txt').write_text('oops')\n"
    )
    result = run_inner_pytest(tmp_path, careless, learner)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "1 passed" in result.stdout
    assert "FAILED: the test run changed the learner's files" in result.stdout
    assert "  added    data/left-by-a-test.txt\n" in result.stdout
    assert "  changed  data\n" in result.stdout
    assert (learner / "data" / "left-by-a-test.txt").read_text() == "oops"


# The inner run's one test: it writes a record to the learner's topic, then waits until the
# learner's broker (the test run's own broker here, whose files are laid out as a learner's
# .runtime/kafka) has written to its metadata log, as it does by itself every 500 ms.
WRITES_TO_THE_LEARNERS_TOPIC = """\
import time

from conftest import LEARNER_ROOT
from infra.kafka_security import client_options
from kafka import KafkaProducer

METADATA = LEARNER_ROOT / ".runtime" / "kafka" / "data" / "__cluster_metadata-0"


def metadata_bytes():
    return sum(segment.stat().st_size for segment in METADATA.glob("*.log"))


def test_writes_to_the_learners_topic():
    start = metadata_bytes()
    producer = KafkaProducer(**client_options({bootstrap!r}), acks="all")
    producer.send({topic!r}, b"written by a test").get(timeout=30)
    producer.close()
    deadline = time.monotonic() + 60
    while metadata_bytes() == start:  # the broker's own write, during the run
        assert time.monotonic() < deadline, "the broker wrote no metadata record in 60 s"
        time.sleep(0.1)
"""


def test_beside_a_running_learner_broker_a_write_to_its_topic_fails_the_run_and_nothing_else(
    kafka_test_broker, tmp_path
):
    if kafka_test_broker is None:
        pytest.skip("the tests use the cluster in KAFKA_BOOTSTRAP_SERVERS: no broker of their own")
    from infra.kafka import delete_topics, end_offsets, ensure_topics

    # The test run's broker keeps its files in a course home's layout (<home>/.runtime/kafka):
    # the inner run takes that home for the learner's folder and the broker for the learner's,
    # found on the course's port (LOCAL_KAFKA_PORT) as a learner's is, not through
    # KAFKA_BOOTSTRAP_SERVERS (which this run set for its own lessons).
    learner = kafka_test_broker.home.parents[1]
    bootstrap = kafka_test_broker.bootstrap
    topic = f"learner-events-{uuid.uuid4().hex[:8]}"
    ensure_topics(bootstrap, [topic])
    source = WRITES_TO_THE_LEARNERS_TOPIC.format(bootstrap=bootstrap, topic=topic)
    environment = {"LOCAL_KAFKA_PORT": str(kafka_test_broker.port), "KAFKA_BOOTSTRAP_SERVERS": ""}
    try:
        result = run_inner_pytest(tmp_path, source, learner, environment)
        written = end_offsets(bootstrap, topic)
    finally:
        delete_topics(bootstrap, [topic])
    output = result.stdout[-3000:] + result.stderr[-3000:]
    assert written == {0: 1}, output
    assert "1 passed" in result.stdout, output
    assert result.returncode == 1, output
    assert "FAILED: the test run changed the learner's files" in result.stdout
    # The record, twice (its topic's end offset, its partition's record file); none of the
    # broker's own writes meanwhile (its metadata log, checkpoint files, server.log).
    assert reported_changes(result.stdout) == [
        f"changed  .runtime/kafka/data/{topic}-0/00000000000000000000.log",
        f"changed  kafka://{bootstrap}/{topic}",
    ]


def test_the_run_fails_when_the_spark_tests_did_not_share_one_worker(monkeypatch):
    import conftest

    config = type("Config", (), {"option": type("Option", (), {"dist": "loadgroup"})()})()
    monkeypatch.setattr(conftest, "jvm_test_workers", {"gw0"})
    assert conftest.grouping_problem(config) is None
    monkeypatch.setattr(conftest, "jvm_test_workers", {"gw0", "gw1"})
    assert "ran on 2 workers (gw0, gw1)" in conftest.grouping_problem(config)

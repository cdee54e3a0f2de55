"""Lesson 14 (monitoring): the lesson's Kafka query on 60 fixed sensor readings, watched by its
listener, with every parsed progress field checked exactly; a failing query and what each view of
it says; the idle event; and the lesson run as a learner runs it (Spark UI, Prometheus page, event
log, PNG).

Listener events arrive on Spark's listener thread after the fact: the tests wait for them with a
bound (``ProgressPrinter.wait_for``), never with a sleep.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from datetime import timedelta
from types import SimpleNamespace

import pytest
from pyspark.errors import StreamingQueryException

from common import config
from common.timestamps import iso, parse_iso
from conftest import load_lesson, prose, run_script
from data_generators import kafka_producer
from infra.files import write_atomically
from infra.kafka import delete_topics, ensure_topics
from infra.runner import finish

lesson = load_lesson("14_monitoring")
ProgressPrinter = lesson.ProgressPrinter  # the lesson's listener
BASE = config.BASE_EVENT_TIME  # 2025-01-15 10:30:00 UTC
EVENTS_WAIT = 60  # seconds: a bound for listener events, which come a little after the batch
pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


def readings(count: int, topic: str) -> list:
    """Sensor readings in order, one a second from 10:30:00, none late: reading i at
    10:30:00 + i s."""
    return kafka_producer.build_messages(
        "sensor", count, base_time=BASE, topic=topic, late_fraction=0, disorder_seconds=0
    )


def attach_listener(spark) -> ProgressPrinter:
    """The lesson's listener, printing into a list (``printed``) instead of stdout."""
    printed = []
    watcher = ProgressPrinter(trigger_ms=lesson.TRIGGER_MS, out=printed.append)
    watcher.printed = printed
    spark.streams.addListener(watcher)
    return watcher


@pytest.fixture
def listener(spark):
    watcher = attach_listener(spark)
    yield watcher
    spark.streams.removeListener(watcher)


@pytest.fixture(scope="module")
def stats_run(spark, kafka_bootstrap, tmp_path_factory):
    """The lesson's stats query over 60 readings in one partition, 20 per micro-batch,
    availableNow."""
    folder, topic = tmp_path_factory.mktemp("stats"), f"test-monitoring-{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_bootstrap, [topic], partitions=1)
    messages = readings(60, topic)
    kafka_producer.send_messages(kafka_bootstrap, messages)
    listener = attach_listener(spark)
    try:
        source = lesson.read_readings(spark, kafka_bootstrap, topic, max_offsets_per_trigger=20)
        stats = lesson.build_sensor_stats(source)
        query = lesson.start_stats(
            stats, folder / "stats", folder / "checkpoint", {"availableNow": True}
        )
        finish([query])
        assert listener.wait_for(lambda: listener.terminated, EVENTS_WAIT), "no onQueryTerminated"
        written = spark.read.json(str(folder / "stats")).collect()
        yield SimpleNamespace(
            query=query,
            topic=topic,
            messages=messages,
            written=written,
            lines=listener.batches_of(lesson.STATS_QUERY),
        )
    finally:
        spark.streams.removeListener(listener)
        delete_topics(kafka_bootstrap, [topic])


def second_and_sensor(message) -> tuple[int, str]:
    """(seconds after 10:30:00, sensor) of one reading."""
    record = json.loads(message.value)
    return int((parse_iso(record["event_time"]) - BASE).total_seconds()), record["sensor_id"]


def at(seconds: int) -> str:
    return iso(BASE + timedelta(seconds=seconds))


@pytest.mark.kafka
def test_the_listener_parses_every_batch_s_progress(stats_run):
    lines = stats_run.lines
    # Readings 0-19, 20-39, 40-59 (10:30:00-10:30:59), then a batch without data: the watermark
    # (newest event time - 10 s) moved, so Spark runs one more to close windows.
    assert [(line.batch_id, line.rows) for line in lines] == [(0, 20), (1, 20), (2, 20), (3, 0)]
    assert [line.watermark for line in lines] == ["1970-01-01T00:00:00.000Z", at(9), at(29), at(49)]
    # One partition: the lag is the topic's 60 messages minus those read so far.
    assert [line.lag for line in lines] == [40, 20, 0, 0]
    # State: one row per (10 s window, sensor) read so far whose window the batch's own watermark
    # has not closed (window end <= watermark: emitted and removed).
    times = [second_and_sensor(message) for message in stats_run.messages]
    expected_state = [
        len(
            {
                (second // 10, sensor)
                for second, sensor in times[:read]
                if (second // 10 + 1) * 10 > mark
            }
        )
        for read, mark in [(20, -1), (40, 9), (60, 29), (60, 49)]
    ]
    assert [line.state_rows for line in lines] == expected_state == [6, 12, 12, 6]
    assert all(line.query == "sensor_stats" and line.batch_ms > 0 for line in lines)
    assert not any("LAG" in " ".join(line.flags) for line in lines)  # the lag only shrank


@pytest.mark.kafka
def test_the_closed_windows_are_written_with_exact_counts(stats_run):
    expected = Counter(
        (second // 10, sensor) for second, sensor in map(second_and_sensor, stats_run.messages)
    )
    # The last watermark, 10:30:49, closed the windows up to [10:30:30, 10:30:40).
    closed = {key: count for key, count in expected.items() if key[0] < 4}
    assert {
        ((parse_iso(row.window.start) - BASE).seconds // 10, row.sensor_id): row.readings
        for row in stats_run.written
    } == closed
    assert sum(closed.values()) == 40


@pytest.mark.kafka
def test_the_query_s_own_view_reads_the_same_fields(stats_run):
    snapshot = SimpleNamespace(
        active=["sensor_stats"], status={"message": "Waiting for next trigger"}
    )
    report = lesson.describe_progress(stats_run.query, snapshot)
    assert report[:3] == [
        "While it ran: spark.streams.active ['sensor_stats']",
        "  query.status {'message': 'Waiting for next trigger'}",
        "lastProgress: batch 3, a batch that ran",
    ]
    assert report[3].startswith("the last batch that read rows, 2: durationMs {'addBatch': ")
    assert report[4].startswith("numInputRows 20: arriving ")
    assert report[5:8] == [
        f"eventTime.watermark {at(29)}",
        "observedMetrics {'input': Row(messages=20, unparseable=0)}",
        f"sink {stats_run.query.lastProgress['sink']['description']}: "
        "numOutputRows -1 (-1: not counted)",
    ]
    assert re.fullmatch(
        r"stateOperators\[0\]: numRowsTotal 12, memoryUsedBytes \d+, numRowsDroppedByWatermark 0",
        report[8],
    )
    assert report[9] == (
        f"offsets behind latest: avg 0, max 0; endOffset {{'{stats_run.topic}': {{'0': 60}}}}; "
        f"latestOffset {{'{stats_run.topic}': {{'0': 60}}}}"
    )


def test_a_failing_query_raises_and_the_listener_hears_why(spark, listener, tmp_path):
    strict = lesson.start_strict(spark, lesson.write_broken_input(tmp_path / "broken"))
    with pytest.raises(StreamingQueryException) as raised:
        strict.awaitTermination(120)

    assert "MALFORMED_RECORD_IN_PARSING" in str(raised.value)
    assert str(strict.exception()).startswith("[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION]")
    assert listener.wait_for(lambda: listener.terminated, EVENTS_WAIT)
    (ended,) = listener.terminated
    assert ended.query == "strict_reader"
    assert ended.error_class == "MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION"
    assert ended.exception.startswith(
        "org.apache.spark.SparkException: [MALFORMED_RECORD_IN_PARSING"
    )
    assert listener.printed[-1] == "[listener] onQueryTerminated: strict_reader failed"


def test_an_idle_query_gets_on_query_idle(spark, listener, tmp_path):
    write_atomically(tmp_path / "in", "a.txt", "x\n")
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "100ms")
    try:
        query = (
            spark.readStream.text(str(tmp_path / "in"))
            .writeStream.format("noop")
            .queryName("idle_query")
            .trigger(processingTime="100 milliseconds")
            .start()
        )
        try:
            query.processAllAvailable()
            assert listener.wait_for(lambda: listener.idle, EVENTS_WAIT), "no onQueryIdle"
        finally:
            query.stop()
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
    assert listener.idle[0][0] == "idle_query"
    # The batch that read the file came as a progress event; idle reports never do.
    assert [(line.batch_id, line.rows) for line in listener.lines] == [(0, 1)]


def test_a_removed_listener_hears_nothing_while_one_still_added_hears_the_query_end(
    spark, tmp_path
):
    removed, kept = attach_listener(spark), attach_listener(spark)
    spark.streams.removeListener(removed)  # what lesson 14's main does once it is done with one
    write_atomically(tmp_path / "in", "a.txt", "x\n")
    try:
        query = (
            spark.readStream.text(str(tmp_path / "in"))
            .writeStream.format("noop")
            .queryName("after_remove")
            .trigger(availableNow=True)
            .start()
        )
        finish([query])
        # One bus calls every listener still added with each event: once the kept one has heard
        # the query end, the removed one would have heard all of it too.
        assert kept.wait_for(
            lambda: any(ended.query == "after_remove" for ended in kept.terminated), EVENTS_WAIT
        ), "no onQueryTerminated"
    finally:
        spark.streams.removeListener(kept)
    assert [(line.batch_id, line.rows) for line in kept.batches_of("after_remove")] == [(0, 1)]
    heard = [
        *removed.names.values(),
        *(line.query for line in removed.lines),
        *(ended.query for ended in removed.terminated),
    ]
    assert not {"after_remove", str(query.id)[:8]} & set(heard), heard
    assert not any("after_remove" in line for line in removed.printed)


def streaming_metrics_sources(spark, query_name: str) -> int:
    """How many metrics sources named ``spark.streaming.<query_name>`` the driver's metrics system
    holds: one while a query started with spark.sql.streaming.metricsEnabled runs."""
    metrics_system = spark.sparkContext._jvm.org.apache.spark.SparkEnv.get().metricsSystem()
    return metrics_system.getSourcesByName(f"spark.streaming.{query_name}").size()


@pytest.mark.parametrize("enabled", ["true", "false"])
def test_metrics_enabled_set_at_runtime_is_read_by_the_query_that_starts_next(
    spark, tmp_path, enabled
):
    name = f"metrics_{enabled}"
    write_atomically(tmp_path / "in", "a.txt", "x\n")
    # The session was created long ago: no builder setting, a runtime one before start().
    spark.conf.set("spark.sql.streaming.metricsEnabled", enabled)
    try:
        query = (
            spark.readStream.text(str(tmp_path / "in"))
            .writeStream.format("noop")
            .queryName(name)
            .trigger(processingTime="100 milliseconds")
            .start()
        )
    finally:
        spark.conf.unset("spark.sql.streaming.metricsEnabled")  # read already, when it started
    try:
        query.processAllAvailable()
        while_running = streaming_metrics_sources(spark, name)
    finally:
        query.stop()

    assert while_running == (1 if enabled == "true" else 0)
    assert streaming_metrics_sources(spark, name) == 0  # the source goes with the query


@pytest.mark.kafka
@pytest.mark.smoke
def test_lesson_14_shows_every_view_of_its_query(kafka_bootstrap, course_home):
    ensure_topics(kafka_bootstrap, [lesson.TOPIC], partitions=lesson.PARTITIONS)
    kafka_producer.send_messages(kafka_bootstrap, readings(30, lesson.TOPIC))

    result = run_script(
        "streaming_tutorial/14_monitoring.py",
        "--no-simulator",
        "--duration",
        "12",
        home=course_home,
        timeout=300,
    )

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert re.search(r"Structured Streaming tab: http://127\.0\.0\.1:\d+/StreamingQuery/", out)
    assert "[listener] onQueryStarted: sensor_stats" in out
    # How many of the 30 readings the 12 s reach, and whether an idle report comes before the end,
    # depends on the machine's pace: the exact rows and onQueryIdle are the in-process tests' job.
    batches = re.findall(r"^  sensor_stats +(\d+) +(\d+) ", out, re.M)
    assert batches and batches[0][0] == "0" and 0 < sum(int(rows) for _, rows in batches) <= 30, (
        out[:3000]
    )
    assert "lastProgress: batch " in out and "observedMetrics {'input': Row(messages=" in out
    assert "awaitTermination raised StreamingQueryException: [STREAM_FAILED]" in out
    assert "errorClassOnException MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION" in out
    gauges = re.findall(
        r"^  metrics_streaming_course_driver_spark_streaming_sensor_stats_(\w+)_Value", out, re.M
    )
    assert sorted(gauges) == [
        "eventTime_watermark",
        "inputRate_total",
        "latency",
        "processingRate_total",
        "states_rowsTotal",
        "states_usedBytes",
    ]
    picture = course_home / "output" / "14_monitoring" / "progress.png"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [path.name[:12] for path in (course_home / "output" / "spark-events").iterdir()] == [
        "eventlog_v2_"
    ]
    assert "org.apache.spark.deploy.history.HistoryServer" in prose(out)
    assert (
        'spark.conf.set("spark.sql.streaming.metricsEnabled", "true") before start() works too'
        in prose(out)
    )
    assert "with spark.streams.removeListener(listener)" in prose(out)

"""Kafka: the course's broker, the producer and lesson 08, against a real broker.

The ``kafka_bootstrap`` fixture (conftest.py) provides one broker for the whole run:
KAFKA_BOOTSTRAP_SERVERS's, one already running on 127.0.0.1:9092, or the course's own,
started once. Every test uses topics with a fresh suffix, so a rerun against the same
broker sees only its own messages, and deletes them afterwards.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType

from common import config, paths
from common.errors import CourseError
from common.files import iso
from common.kafka import (
    check_reachable,
    consume_all,
    delete_topics,
    end_offsets,
    ensure_topics,
    kafka_for_lesson,
    list_topics,
    local_bootstrap,
)
from conftest import load_lesson, run_script
from data_generators import kafka_producer
from data_generators.generate_ad_events import make_ad_events

BASE = datetime(2025, 1, 15, 10, 30, tzinfo=timezone.utc)
BASE_TEXT = "2025-01-15T10:30:00Z"
lesson = load_lesson("08_kafka_streaming")
# kafka-python 3.0 loads its protocol schemas with importlib.resources calls that Python 3.11 deprecates.
pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


@pytest.fixture
def topic(kafka_bootstrap):
    """topic("name") -> a topic name unique to this test; all of them are deleted afterwards."""
    suffix = uuid.uuid4().hex[:8]
    made = []

    def make(name: str) -> str:
        made.append(f"test-{name}-{suffix}")
        return made[-1]

    yield make
    delete_topics(kafka_bootstrap, made)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


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


def kafka_time(milliseconds: int) -> str:
    """A Kafka timestamp as Spark's to_json writes it (UTC, milliseconds)."""
    return iso(datetime.fromtimestamp(milliseconds / 1000, tz=timezone.utc))


def expected_enriched(delivery) -> tuple[str, dict]:
    """What lesson 08 must write for one good message, worked out here by hand."""
    event = json.loads(delivery.message.value)
    revenue = round(event["price"] * event["quantity"], 2) if event["event_type"] == "purchase" else 0.0
    value = {
        **event,
        "revenue": revenue,
        "event_date": event["timestamp"][:10],
        "kafka_timestamp": kafka_time(delivery.timestamp_ms),
        "source_partition": delivery.partition,
        "source_offset": delivery.offset,
    }
    return event["user_id"], value


def run_once(records, bootstrap: str, topic: str, checkpoint) -> None:
    """Write ``records`` to ``topic`` with the lesson's own Kafka writer, once over all input."""
    query = lesson.write_to_kafka(records, bootstrap, topic, checkpoint, {"availableNow": True}, f"test_{topic}")
    assert query.awaitTermination(180), "the query did not finish its input"
    assert query.exception() is None


# --- lesson 08's query, end to end ---------------------------------------------------------------


@pytest.mark.kafka
def test_lesson_writes_every_good_event_enriched_and_quarantines_the_malformed(spark, kafka_bootstrap, topic, tmp_path):
    source, enriched, quarantined = topic("events"), topic("enriched"), topic("quarantine")
    ensure_topics(kafka_bootstrap, [source, enriched, quarantined], partitions=2)
    messages = kafka_producer.build_messages("ecommerce", 24, seed=7, base_time=BASE, topic=source, malformed_every=8)
    deliveries = kafka_producer.send_messages(kafka_bootstrap, messages)

    raw = lesson.read_topic(spark, kafka_bootstrap, source, starting_offsets="earliest", max_offsets_per_trigger=10)
    parsed = lesson.parse_events(raw)
    run_once(lesson.to_kafka_record(lesson.enrich(lesson.valid_events(parsed))), kafka_bootstrap, enriched,
             tmp_path / "enriched")
    run_once(lesson.to_quarantine_record(lesson.quarantine(parsed)), kafka_bootstrap, quarantined,
             tmp_path / "quarantine")

    good = [delivery for delivery in deliveries if not delivery.message.malformed]
    bad = [delivery for delivery in deliveries if delivery.message.malformed]
    assert (len(good), len(bad)) == (21, 3)  # messages 8, 16 and 24 are cut in half

    written = [(record.key.decode(), json.loads(record.value)) for record in consume_all(kafka_bootstrap, enriched)]
    by_id = lambda pair: pair[1]["event_id"]  # noqa: E731
    assert sorted(written, key=by_id) == sorted(map(expected_enriched, good), key=by_id)
    assert [list(value) for _, value in written][0] == list(lesson.OUTPUT_FIELDS)

    held = [(record.key.decode(), json.loads(record.value)) for record in consume_all(kafka_bootstrap, quarantined)]
    expected_bad = [
        (
            delivery.message.key,
            {
                "source_topic": source,
                "source_partition": delivery.partition,
                "source_offset": delivery.offset,
                "kafka_timestamp": kafka_time(delivery.timestamp_ms),
                "reason": "not a JSON object",
                "raw_value": delivery.message.value,
            },
        )
        for delivery in bad
    ]
    offsets = lambda pair: (pair[1]["source_partition"], pair[1]["source_offset"])  # noqa: E731
    assert sorted(held, key=offsets) == sorted(expected_bad, key=offsets)


@pytest.mark.kafka
def test_a_replay_writes_duplicates_that_dedupe_by_event_id_removes(spark, kafka_bootstrap, topic, tmp_path):
    source, enriched = topic("events"), topic("enriched")
    ensure_topics(kafka_bootstrap, [source, enriched], partitions=1)
    kafka_producer.send_messages(
        kafka_bootstrap, kafka_producer.build_messages("ecommerce", 6, seed=3, base_time=BASE, topic=source)
    )
    records = lesson.to_kafka_record(lesson.enrich(lesson.valid_events(lesson.parse_events(
        lesson.read_topic(spark, kafka_bootstrap, source)))))
    run_once(records, kafka_bootstrap, enriched, tmp_path / "first")
    run_once(records, kafka_bootstrap, enriched, tmp_path / "first")  # same checkpoint: nothing new
    assert sum(end_offsets(kafka_bootstrap, enriched).values()) == 6
    run_once(records, kafka_bootstrap, enriched, tmp_path / "replay")  # a new checkpoint replays the topic

    ids = [json.loads(record.value)["event_id"] for record in consume_all(kafka_bootstrap, enriched)]
    assert len(ids) == 12 and len(set(ids)) == 6 and sorted(set(ids)) == sorted(ids[:6])


@pytest.mark.kafka
def test_latest_skips_the_messages_already_in_the_topic_and_earliest_reads_them(spark, kafka_bootstrap, topic, tmp_path):
    source = topic("offsets")
    ensure_topics(kafka_bootstrap, [source], partitions=2)
    kafka_producer.send_messages(
        kafka_bootstrap, kafka_producer.build_messages("ecommerce", 12, base_time=BASE, topic=source)
    )
    assert lesson.count_available(spark, kafka_bootstrap, source, "latest", tmp_path / "latest") == 0
    assert lesson.count_available(spark, kafka_bootstrap, source, "earliest", tmp_path / "earliest") == 12


@pytest.mark.kafka
def test_max_offsets_per_trigger_bounds_every_micro_batch(spark, kafka_bootstrap, topic, tmp_path):
    source = topic("bounded")
    ensure_topics(kafka_bootstrap, [source], partitions=1)
    kafka_producer.send_messages(
        kafka_bootstrap, kafka_producer.build_messages("ecommerce", 12, base_time=BASE, topic=source)
    )
    query = (
        lesson.read_topic(spark, kafka_bootstrap, source, max_offsets_per_trigger=5)
        .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "bounded"))
        .trigger(availableNow=True).start()
    )
    assert query.awaitTermination(180)
    assert [progress["numInputRows"] for progress in query.recentProgress] == [5, 5, 2]


# --- lesson 08's functions on hand-made rows (no broker needed) --------------------------------------

KAFKA_ROW = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
    ]
)
GOOD = {"event_id": "EVT-1", "user_id": "USER-1", "event_type": "purchase", "product_id": "P001",
        "product_name": "Laptop", "category": "Electronics", "price": 19.99, "quantity": 3,
        "timestamp": "2025-01-15T23:59:59.000Z"}


def kafka_rows(spark, values: list):
    moment = datetime(2025, 1, 16, tzinfo=timezone.utc)
    rows = [(b"k", None if value is None else value.encode(), "t", 0, offset, moment)
            for offset, value in enumerate(values)]
    return spark.createDataFrame(rows, KAFKA_ROW)


def test_every_kind_of_bad_value_gets_its_reason_and_keeps_its_offset(spark):
    values = [
        json.dumps(GOOD),
        json.dumps(GOOD)[:30],  # cut in half
        None,  # a tombstone or a producer bug
        "[1, 2, 3]",  # JSON, but not an object
        json.dumps({**GOOD, "price": "cheap"}),
        json.dumps({key: value for key, value in GOOD.items() if key != "event_id"}),
        json.dumps({**GOOD, "timestamp": None}),
    ]
    parsed = lesson.parse_events(kafka_rows(spark, values))
    reasons = {row["source_offset"]: (row["reason"], row["raw_value"]) for row in lesson.quarantine(parsed).collect()}
    assert reasons == {
        1: ("not a JSON object", values[1]),
        2: ("empty value", None),
        3: ("not a JSON object", values[3]),
        4: ("a field has the wrong type", values[4]),
        5: ("missing event_id", values[5]),
        6: ("missing timestamp", values[6]),
    }
    assert [row["event_id"] for row in lesson.valid_events(parsed).collect()] == ["EVT-1"]


def test_enrich_adds_revenue_for_purchases_only_and_the_event_date(spark):
    view = json.dumps({**GOOD, "event_id": "EVT-2", "event_type": "view", "quantity": 1})
    enriched = lesson.enrich(lesson.valid_events(lesson.parse_events(kafka_rows(spark, [json.dumps(GOOD), view]))))
    rows = enriched.select("event_id", "revenue", F.col("event_date").cast("string").alias("day")).collect()
    assert [tuple(row) for row in rows] == [("EVT-1", 59.97, "2025-01-15"), ("EVT-2", 0.0, "2025-01-15")]


# --- the producer ---------------------------------------------------------------------------------


def test_producer_messages_are_reproducible_keyed_and_malformed_where_asked():
    first = kafka_producer.build_messages("ecommerce", 20, seed=5, base_time=BASE, malformed_every=5)
    assert first == kafka_producer.build_messages("ecommerce", 20, seed=5, base_time=BASE, malformed_every=5)
    assert first != kafka_producer.build_messages("ecommerce", 20, seed=6, base_time=BASE, malformed_every=5)
    assert [number for number, message in enumerate(first, 1) if message.malformed] == [5, 10, 15, 20]
    for message in first:
        assert message.topic == config.TOPIC_EVENTS
        if message.malformed:
            with pytest.raises(json.JSONDecodeError):
                json.loads(message.value)
        else:
            assert message.key == json.loads(message.value)["user_id"]
    enriched = kafka_producer.build_messages("ecommerce", 20, seed=5, base_time=BASE, enrich=True)
    profiles = {}
    for message in enriched:
        record = json.loads(message.value)
        assert profiles.setdefault(record["user_id"], (record["country"], record["user_agent"])) == (
            record["country"], record["user_agent"])


@pytest.mark.kafka
@pytest.mark.smoke
def test_producer_script_sends_exactly_its_messages_in_key_order(kafka_bootstrap, topic, course_home):
    target = topic("produced")
    result = run_script("data_generators/kafka_producer.py", "--count", "20", "--rate", "0", "--topic", target,
                        "--malformed-every", "5", "--seed", "3", "--base-time", BASE_TEXT, home=course_home, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Done: 20 messages acknowledged by Kafka (4 deliberately malformed)" in result.stdout

    expected = kafka_producer.build_messages("ecommerce", 20, seed=3, base_time=BASE, topic=target, malformed_every=5)
    records = consume_all(kafka_bootstrap, target)
    assert sorted((r.key.decode(), r.value.decode()) for r in records) == sorted((m.key, m.value) for m in expected)
    # One key always lands in one partition, in the order it was sent: per-key order holds.
    for key in {message.key for message in expected}:
        assert [r.value.decode() for r in records if r.key.decode() == key] == [
            m.value for m in expected if m.key == key]
    assert len({r.partition for r in records if r.key.decode() == expected[0].key}) == 1


@pytest.mark.kafka
@pytest.mark.smoke
def test_producer_ads_sends_impressions_and_clicks_to_their_topics(kafka_bootstrap, topic, course_home):
    impressions, clicks = topic("impressions"), topic("clicks")
    result = run_script("data_generators/kafka_producer.py", "--kind", "ads", "--count", "30", "--rate", "0",
                        "--impressions-topic", impressions, "--clicks-topic", clicks, "--base-time", BASE_TEXT,
                        home=course_home, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    made_impressions, made_clicks = make_ad_events(30, base_time=BASE)
    sent_impressions = [json.loads(r.value) for r in consume_all(kafka_bootstrap, impressions)]
    sent_clicks = [json.loads(r.value) for r in consume_all(kafka_bootstrap, clicks)]
    assert sorted(sent_impressions, key=lambda r: r["impression_id"]) == made_impressions
    assert sorted(r["click_id"] for r in sent_clicks) == sorted(c["click_id"] for c in made_clicks)


@pytest.mark.smoke
def test_producer_without_a_broker_says_what_to_do_instead_of_hanging(course_home):
    result = run_script("data_generators/kafka_producer.py", "--bootstrap-servers", f"127.0.0.1:{free_port()}",
                        "--count", "3", home=course_home, timeout=60)
    assert result.returncode == 1
    assert "No Kafka broker answers" in result.stderr and "local_kafka.py start" in result.stderr
    assert "Traceback" not in result.stderr


# --- reaching a broker ------------------------------------------------------------------------------


def test_check_reachable_fails_fast_on_a_closed_port():
    started = time.monotonic()
    with pytest.raises(CourseError, match="No Kafka broker answers") as failure:
        check_reachable(f"127.0.0.1:{free_port()}", timeout=3)
    assert time.monotonic() - started < 10
    assert "local_kafka.py start" in str(failure.value)


def test_check_reachable_gives_up_on_a_program_that_is_not_kafka():
    with silent_listener() as port:
        started = time.monotonic()
        with pytest.raises(CourseError, match=f"No Kafka broker answers at 127.0.0.1:{port}"):
            check_reachable(f"127.0.0.1:{port}", timeout=2)
        assert time.monotonic() - started < 15


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


@pytest.mark.kafka
def test_ensure_topics_is_idempotent_and_keeps_existing_partitions(kafka_bootstrap, topic):
    name = topic("idempotent")
    ensure_topics(kafka_bootstrap, [name], partitions=3)
    ensure_topics(kafka_bootstrap, [name, name], partitions=1)
    assert sorted(end_offsets(kafka_bootstrap, name)) == [0, 1, 2]
    assert name in list_topics(kafka_bootstrap)


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


# --- lesson 08 as a learner runs it -----------------------------------------------------------------


@pytest.mark.kafka
@pytest.mark.smoke
def test_lesson_08_runs_with_no_arguments(kafka_bootstrap, course_home):
    result = run_script("streaming_tutorial/08_kafka_streaming.py", home=course_home, timeout=420)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert f"Using the Kafka cluster in KAFKA_BOOTSTRAP_SERVERS: {kafka_bootstrap}" in out
    assert "Started the kafka_producer simulator for this run" in out
    assert "startingOffsets=latest" in out and "startingOffsets=earliest" in out
    assert "|event_id  |user_id  |event_type|revenue|partition|offset|" in out
    assert f"'{config.TOPIC_ENRICHED}':" in out and "distinct event_id" in out
    assert f"'{config.TOPIC_QUARANTINE}':" in out and "not a JSON object" in out

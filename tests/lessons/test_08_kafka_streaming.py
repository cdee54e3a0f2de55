"""Lesson 08 (Kafka source and sink): its query against a real broker, its functions on
hand-made rows, and the lesson run as a learner runs it.

The ``kafka_bootstrap`` fixture (conftest.py) provides the test run's own broker; the ``topic``
fixture gives every test topics with a fresh suffix and deletes them afterwards.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from common.timestamps import iso
from conftest import load_lesson
from data_generators import kafka_producer
from infra.kafka import consume_all, end_offsets, ensure_topics

BASE = datetime(2025, 1, 15, 10, 30, tzinfo=timezone.utc)
lesson = load_lesson("08_kafka_streaming")
# kafka-python 3.0 loads its protocol schemas with importlib.resources calls that Python 3.11
# deprecates.
pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


def kafka_time(milliseconds: int) -> str:
    """A Kafka timestamp as Spark's to_json writes it (UTC, milliseconds)."""
    return iso(datetime.fromtimestamp(milliseconds / 1000, tz=timezone.utc))


ENRICHED_FIELDS = [
    "event_id",
    "user_id",
    "event_type",
    "product_id",
    "product_name",
    "category",
    "price",
    "quantity",
    "timestamp",
    "source_partition",
    "source_offset",
    "kafka_timestamp",
    "revenue",
    "event_date",
]


def expected_enriched(delivery) -> tuple[str, dict]:
    """What lesson 08 must write for one good message, worked out here by hand."""
    event = json.loads(delivery.message.value)
    revenue = (
        round(event["price"] * event["quantity"], 2) if event["event_type"] == "purchase" else 0.0
    )
    value = {
        **event,
        "source_partition": delivery.partition,
        "source_offset": delivery.offset,
        "kafka_timestamp": kafka_time(delivery.timestamp_ms),
        "revenue": revenue,
        "event_date": event["timestamp"][:10],
    }
    return event["user_id"], value


def by_event_id(pair: tuple[str, dict]) -> str:
    """Sort key of a (key, value) record: its event_id."""
    return pair[1]["event_id"]


def by_source_offset(pair: tuple[str, dict]) -> tuple[int, int]:
    """Sort key of a quarantine record: where the original message is (partition, offset)."""
    return (pair[1]["source_partition"], pair[1]["source_offset"])


def run_once(records, bootstrap: str, topic: str, checkpoint) -> None:
    """Write ``records`` to ``topic`` with the lesson's own Kafka writer, once over all input."""
    query = lesson.start_kafka_sink(
        records, bootstrap, topic, checkpoint, {"availableNow": True}, f"test_{topic}"
    )
    assert query.awaitTermination(180), "the query did not finish its input"
    assert query.exception() is None


# --- lesson 08's query, end to end ---------------------------------------------------------------


@pytest.mark.kafka
def test_lesson_writes_every_good_event_enriched_and_quarantines_the_malformed(
    spark, kafka_bootstrap, topic, tmp_path
):
    source, enriched, quarantined = topic("events"), topic("enriched"), topic("quarantine")
    ensure_topics(kafka_bootstrap, [source, enriched, quarantined], partitions=2)
    messages = kafka_producer.build_messages(
        "ecommerce", 24, seed=7, base_time=BASE, topic=source, malformed_every=8
    )
    deliveries = kafka_producer.send_messages(kafka_bootstrap, messages)

    parsed = lesson.parse_events(
        lesson.read_messages(spark, kafka_bootstrap, source, max_offsets_per_trigger=10)
    )
    run_once(
        lesson.to_kafka_record(lesson.build_enriched(parsed)),
        kafka_bootstrap,
        enriched,
        tmp_path / "enriched",
    )
    run_once(
        lesson.to_quarantine_record(lesson.build_quarantine(parsed)),
        kafka_bootstrap,
        quarantined,
        tmp_path / "quarantine",
    )

    good = [delivery for delivery in deliveries if not delivery.message.malformed]
    bad = [delivery for delivery in deliveries if delivery.message.malformed]
    assert (len(good), len(bad)) == (21, 3)  # messages 8, 16 and 24 are cut in half

    written = [
        (record.key.decode(), json.loads(record.value))
        for record in consume_all(kafka_bootstrap, enriched)
    ]
    assert sorted(written, key=by_event_id) == sorted(map(expected_enriched, good), key=by_event_id)
    assert [list(value) for _, value in written][0] == ENRICHED_FIELDS

    held = [
        (record.key.decode(), json.loads(record.value))
        for record in consume_all(kafka_bootstrap, quarantined)
    ]
    expected_bad = [
        (
            delivery.message.key,
            {
                "source_topic": source,
                "source_partition": delivery.partition,
                "source_offset": delivery.offset,
                "kafka_timestamp": kafka_time(delivery.timestamp_ms),
                "reason": "not a JSON object",
                "raw_line": delivery.message.value,
            },
        )
        for delivery in bad
    ]
    assert sorted(held, key=by_source_offset) == sorted(expected_bad, key=by_source_offset)


@pytest.mark.kafka
def test_a_replay_writes_duplicates_that_dedupe_by_event_id_removes(
    spark, kafka_bootstrap, topic, tmp_path
):
    source, enriched = topic("events"), topic("enriched")
    ensure_topics(kafka_bootstrap, [source, enriched], partitions=1)
    kafka_producer.send_messages(
        kafka_bootstrap,
        kafka_producer.build_messages("ecommerce", 6, seed=3, base_time=BASE, topic=source),
    )
    records = lesson.to_kafka_record(
        lesson.build_enriched(
            lesson.parse_events(lesson.read_messages(spark, kafka_bootstrap, source))
        )
    )
    run_once(records, kafka_bootstrap, enriched, tmp_path / "first")
    run_once(records, kafka_bootstrap, enriched, tmp_path / "first")  # same checkpoint: nothing new
    assert sum(end_offsets(kafka_bootstrap, enriched).values()) == 6
    run_once(
        records, kafka_bootstrap, enriched, tmp_path / "replay"
    )  # a new checkpoint replays the topic

    ids = [
        json.loads(record.value)["event_id"] for record in consume_all(kafka_bootstrap, enriched)
    ]
    assert len(ids) == 12 and len(set(ids)) == 6 and sorted(set(ids)) == sorted(ids[:6])


@pytest.mark.kafka
def test_latest_skips_the_messages_already_in_the_topic_and_earliest_reads_them(
    spark, kafka_bootstrap, topic, tmp_path
):
    source = topic("offsets")
    ensure_topics(kafka_bootstrap, [source], partitions=2)
    kafka_producer.send_messages(
        kafka_bootstrap,
        kafka_producer.build_messages("ecommerce", 12, base_time=BASE, topic=source),
    )
    assert lesson.read_row_count(spark, kafka_bootstrap, "latest", source) == 0
    assert lesson.read_row_count(spark, kafka_bootstrap, "earliest", source) == 12


@pytest.mark.kafka
def test_max_offsets_per_trigger_bounds_every_micro_batch(spark, kafka_bootstrap, topic, tmp_path):
    source = topic("bounded")
    ensure_topics(kafka_bootstrap, [source], partitions=1)
    kafka_producer.send_messages(
        kafka_bootstrap,
        kafka_producer.build_messages("ecommerce", 12, base_time=BASE, topic=source),
    )
    query = (
        lesson.read_messages(spark, kafka_bootstrap, source, max_offsets_per_trigger=5)
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "bounded"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180)
    assert [progress["numInputRows"] for progress in query.recentProgress] == [5, 5, 2]


@pytest.mark.kafka
def test_the_source_gives_headers_and_the_producers_timestamp_and_min_partitions_splits(
    spark, kafka_bootstrap, topic
):
    from kafka import KafkaProducer

    from infra.kafka import client_options

    source = topic("columns")
    ensure_topics(kafka_bootstrap, [source], partitions=1)
    # The producer sets each record's timestamp (CreateTime, the topic's default): a day before
    # it sends them, so the broker's clock cannot be mistaken for it.
    stamped = int(BASE.timestamp() * 1000)
    producer = KafkaProducer(**client_options(kafka_bootstrap))
    for number in range(6):
        producer.send(
            source,
            key=f"K{number}".encode(),
            value=b"{}",
            headers=[("origin", b"shop")],
            timestamp_ms=stamped + number,
        )
    producer.flush()
    producer.close()

    rows = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("subscribe", source)
        .option("includeHeaders", "true")
        .option("minPartitions", 3)
        .load()
        .select(
            F.col("key").cast("string").alias("key"),
            "headers",
            F.unix_millis("timestamp").alias("millis"),
            "timestampType",
            F.spark_partition_id().alias("task"),
        )
        .orderBy("key")
        .collect()
    )

    assert [row.key for row in rows] == [f"K{number}" for number in range(6)]
    assert [[(h.key, bytes(h.value)) for h in row.headers] for row in rows] == [
        [("origin", b"shop")]
    ] * 6
    assert [row.millis for row in rows] == [stamped + number for number in range(6)]
    assert {row.timestampType for row in rows} == {0}  # 0 CreateTime, 1 LogAppendTime
    # One Kafka partition, read by three Spark tasks: minPartitions splits its offset range.
    assert len({row.task for row in rows}) == 3


# --- lesson 08's functions on hand-made rows (no broker needed) ----------------------------------

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
GOOD = {
    "event_id": "EVT-1",
    "user_id": "USER-1",
    "event_type": "purchase",
    "product_id": "P001",
    "product_name": "Laptop",
    "category": "Electronics",
    "price": 19.99,
    "quantity": 3,
    "timestamp": "2025-01-15T23:59:59.000Z",
}


def kafka_rows(spark, values: list):
    moment = datetime(2025, 1, 16, tzinfo=timezone.utc)
    rows = [
        (b"k", None if value is None else value.encode(), "t", 0, offset, moment)
        for offset, value in enumerate(values)
    ]
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
    reasons = {
        row["source_offset"]: (row["reason"], row["raw_line"], row["key"], row["source_partition"])
        for row in lesson.build_quarantine(parsed).collect()
    }
    assert {offset: reason_and_line for offset, (*reason_and_line, _, _) in reasons.items()} == {
        1: ["not a JSON object", values[1]],
        2: ["empty line", None],
        3: ["not a JSON object", values[3]],
        4: ["price is not a number", values[4]],
        5: ["missing event_id", values[5]],
        6: ["missing timestamp", values[6]],
    }
    assert {(key, partition) for *_, key, partition in reasons.values()} == {
        ("k", 0)
    }  # where each came from
    assert [row["event_id"] for row in lesson.build_enriched(parsed).collect()] == ["EVT-1"]


def test_enrich_adds_revenue_for_purchases_only_and_the_event_date(spark):
    view = json.dumps({**GOOD, "event_id": "EVT-2", "event_type": "view", "quantity": 1})
    enriched = lesson.build_enriched(
        lesson.parse_events(kafka_rows(spark, [json.dumps(GOOD), view]))
    )
    rows = enriched.select(
        "event_id", "revenue", F.col("event_date").cast("string").alias("day")
    ).collect()
    assert [tuple(row) for row in rows] == [
        ("EVT-1", 59.97, "2025-01-15"),
        ("EVT-2", 0.0, "2025-01-15"),
    ]


# --- lesson 08 as a learner runs it ----------------------------------------------------------


# Lesson 08 as a learner runs it (through spark-submit, on a Spark standalone cluster):
# tests/test_cluster.py.

"""Kafka from the client side: reaching a broker, topics, advice for failures, and the producer
simulator.

The ``kafka_bootstrap`` fixture (conftest.py) provides the test run's own broker; the ``topic``
fixture gives every test topics with a fresh suffix and deletes them afterwards.
"""

from __future__ import annotations

import ast
import json
from datetime import datetime, timezone

import pytest
from pyspark.errors import StreamingQueryException

from common import config
from conftest import ROOT, free_port, run_script, silent_listener
from data_generators import kafka_producer
from data_generators.generate_ad_events import make_ad_events
from infra import kafka
from infra.errors import CourseError
from infra.kafka import (
    check_reachable,
    consume_all,
    end_offsets,
    ensure_topics,
    explain_failure,
    explain_failures,
    list_topics,
    recreate_topics,
)

BASE = datetime(2025, 1, 15, 10, 30, tzinfo=timezone.utc)
BASE_TEXT = "2025-01-15T10:30:00Z"
HOST = config.LOCAL_KAFKA_HOST
# kafka-python 3.0 loads its protocol schemas with importlib.resources calls that Python 3.11
# deprecates.
pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


# --- the producer ---------------------------------------------------------------------------------


def test_producer_messages_are_reproducible_keyed_and_malformed_where_asked():
    first = kafka_producer.build_messages(
        "ecommerce", 20, seed=5, base_time=BASE, malformed_every=5
    )
    assert first == kafka_producer.build_messages(
        "ecommerce", 20, seed=5, base_time=BASE, malformed_every=5
    )
    assert first != kafka_producer.build_messages(
        "ecommerce", 20, seed=6, base_time=BASE, malformed_every=5
    )
    assert [number for number, message in enumerate(first, 1) if message.malformed] == [
        5,
        10,
        15,
        20,
    ]
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
        assert profiles.setdefault(
            record["user_id"], (record["country"], record["user_agent"])
        ) == (record["country"], record["user_agent"])


@pytest.mark.kafka
@pytest.mark.smoke
def test_producer_script_sends_exactly_its_messages_in_key_order(
    kafka_bootstrap, topic, course_home
):
    target = topic("produced")
    result = run_script(
        "data_generators/kafka_producer.py",
        "--count",
        "20",
        "--rate",
        "0",
        "--topic",
        target,
        "--malformed-every",
        "5",
        "--seed",
        "3",
        "--base-time",
        BASE_TEXT,
        home=course_home,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Done: 20 messages acknowledged by Kafka (4 deliberately malformed)" in result.stdout

    expected = kafka_producer.build_messages(
        "ecommerce", 20, seed=3, base_time=BASE, topic=target, malformed_every=5
    )
    records = consume_all(kafka_bootstrap, target)
    assert sorted((r.key.decode(), r.value.decode()) for r in records) == sorted(
        (m.key, m.value) for m in expected
    )
    # One key always lands in one partition, in the order it was sent: per-key order holds.
    for key in {message.key for message in expected}:
        assert [r.value.decode() for r in records if r.key.decode() == key] == [
            m.value for m in expected if m.key == key
        ]
    assert len({r.partition for r in records if r.key.decode() == expected[0].key}) == 1


@pytest.mark.kafka
@pytest.mark.smoke
def test_producer_ads_sends_impressions_and_clicks_to_their_topics(
    kafka_bootstrap, topic, course_home
):
    impressions, clicks = topic("impressions"), topic("clicks")
    result = run_script(
        "data_generators/kafka_producer.py",
        "--kind",
        "ads",
        "--count",
        "30",
        "--rate",
        "0",
        "--impressions-topic",
        impressions,
        "--clicks-topic",
        clicks,
        "--base-time",
        BASE_TEXT,
        home=course_home,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    made_impressions, made_clicks = make_ad_events(30, base_time=BASE)
    sent_impressions = [json.loads(r.value) for r in consume_all(kafka_bootstrap, impressions)]
    sent_clicks = [json.loads(r.value) for r in consume_all(kafka_bootstrap, clicks)]
    assert sorted(sent_impressions, key=lambda r: r["impression_id"]) == made_impressions
    assert sorted(r["click_id"] for r in sent_clicks) == sorted(c["click_id"] for c in made_clicks)


@pytest.mark.smoke
def test_producer_without_a_broker_says_what_to_do_instead_of_hanging(course_home):
    result = run_script(
        "data_generators/kafka_producer.py",
        "--bootstrap-servers",
        f"127.0.0.1:{free_port()}",
        "--count",
        "3",
        home=course_home,
        timeout=60,
    )
    assert result.returncode == 1
    assert "No Kafka broker answers" in result.stderr and "local_kafka.py start" in result.stderr
    assert "Traceback" not in result.stderr


# --- reaching a broker
# ------------------------------------------------------------------------------


def test_check_reachable_on_a_closed_port_says_how_to_start_a_broker():
    with pytest.raises(CourseError, match="No Kafka broker answers") as failure:
        check_reachable(f"{HOST}:{free_port(HOST)}", timeout=3)
    assert "local_kafka.py start" in str(failure.value)


def test_check_reachable_gives_up_on_a_program_that_is_not_kafka():
    with silent_listener() as port:
        with pytest.raises(CourseError, match=f"No Kafka broker answers at {HOST}:{port}"):
            check_reachable(f"{HOST}:{port}", timeout=2)


@pytest.mark.kafka
def test_ensure_topics_is_idempotent_and_keeps_existing_partitions(kafka_bootstrap, topic):
    name = topic("idempotent")
    ensure_topics(kafka_bootstrap, [name], partitions=3)
    ensure_topics(kafka_bootstrap, [name, name], partitions=1)
    assert sorted(end_offsets(kafka_bootstrap, name)) == [0, 1, 2]
    assert name in list_topics(kafka_bootstrap)


# --- advice for Kafka failures --------------------------------------------------------------------

# As Spark 4.2 words it for a topic recreated under a checkpoint (the test below meets it for real).
DATA_LOSS = (
    "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Some data may have been "
    "lost because they are not available in Kafka any more;\neither the data was aged out by Kafka "
    "or the topic may have been deleted before all the data in the\ntopic was processed.\nIf you "
    "don't want your streaming query to fail on such cases, set the source option failOnDataLoss "
    "to false.\nReason: Partition events-0 offset was changed from 5 to 2."
)


@pytest.mark.parametrize(
    "message, advice",
    [
        (DATA_LOSS, "Run the lesson again with --reset"),
        (
            "[KAFKA_DATA_LOSS.PARTITIONS_DELETED] Partitions events-0 have been deleted.",
            "Run the lesson again with --reset",
        ),
        (
            "org.apache.kafka.infra.errors.UnknownTopicOrPartitionException: This server does not "
            "host this topic-partition.",
            "A topic the query reads or writes does not exist",
        ),
        (
            "org.apache.kafka.infra.errors.TimeoutException: Topic events not present in metadata "
            "after 60000 ms.",
            "Kafka could not tell Spark where a topic lives",
        ),
        (
            "org.apache.kafka.infra.errors.TimeoutException: Timed out waiting for a node "
            "assignment. Call: describeTopics",
            "Spark lost its connection to the Kafka broker",
        ),
        (
            "org.apache.kafka.infra.errors.TimeoutException: Timeout of 60000ms expired before the "
            "position for partition events-0 could be determined",
            "Spark lost its connection to the Kafka broker",
        ),
        # Near misses: a word that also appears in unrelated errors is not enough.
        ("Connection to node 1 (localhost/127.0.0.1:9092) disconnected", None),
        ("Invalid value 'sometimes' for option failOnDataLoss", None),
        ("[STREAM_FAILED] Query terminated with exception: division by zero", None),
    ],
)
def test_explain_failure_recognises_each_failure_by_its_exact_text(message, advice):
    explained = explain_failure(RuntimeError(message))
    if advice is None:
        assert explained is None
    else:
        assert explained.startswith(advice) or advice in explained
        assert explained.endswith(f"(Spark said: {message.splitlines()[0][:300]})")


def test_the_data_loss_advice_says_what_reset_deletes():
    advice = explain_failure(RuntimeError(DATA_LOSS))
    assert (
        "deletes the lesson's checkpoints and output" in advice and "empties its topics" in advice
    )


def test_explain_failures_turns_only_known_failures_into_advice():
    with pytest.raises(CourseError, match="Run the lesson again with --reset"):
        with explain_failures():
            raise RuntimeError(DATA_LOSS)
    with pytest.raises(ZeroDivisionError):
        with explain_failures():
            raise ZeroDivisionError("not Kafka's")


@pytest.mark.kafka
def test_a_topic_recreated_under_a_checkpoint_fails_with_data_loss_and_gets_the_reset_advice(
    spark, kafka_bootstrap, topic, tmp_path
):
    source = topic("recreated")
    ensure_topics(kafka_bootstrap, [source])

    def read_all_once():
        query = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", kafka_bootstrap)
            .option("subscribe", source)
            .option("startingOffsets", "earliest")
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(180)
        return query

    kafka_producer.send_messages(
        kafka_bootstrap, kafka_producer.build_messages("ecommerce", 5, topic=source)
    )
    assert read_all_once().exception() is None
    recreate_topics(
        kafka_bootstrap, [source]
    )  # the checkpoint says offset 5; the new topic ends at 2
    kafka_producer.send_messages(
        kafka_bootstrap, kafka_producer.build_messages("ecommerce", 2, topic=source)
    )
    with pytest.raises(StreamingQueryException) as failure:
        read_all_once()
    assert "offset was changed from 5 to 2" in str(failure.value)
    assert "Run the lesson again with --reset" in explain_failure(failure.value)


# --- one client module, one place for addresses
# -----------------------------------------------------


def test_the_client_module_never_imports_the_broker_module():
    tree = ast.parse((ROOT / "streaming_tutorial" / "infra" / "kafka.py").read_text())
    imported = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]
    imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    assert not [name for name in imported if "kafka_broker" in name]
    assert not hasattr(kafka, "kafka_for_lesson")


def test_only_config_names_the_course_brokers_ports():
    sources = [
        *(ROOT / "streaming_tutorial" / "common").glob("*.py"),
        *(ROOT / "streaming_tutorial" / "infra").glob("*.py"),
        *(ROOT / "streaming_tutorial" / "teaching").glob("*.py"),
        *(ROOT / "data_generators").glob("*.py"),
        ROOT / "local_kafka.py",
        ROOT / "course.py",
    ]
    naming = [
        path.name
        for path in sources
        if path.name != "config.py"
        and any(
            str(port) in path.read_text()
            for port in (
                config.DEFAULT_LOCAL_KAFKA_PORT,
                config.DEFAULT_LOCAL_KAFKA_CONTROLLER_PORT,
            )
        )
    ]
    assert naming == []

"""Kafka from the client side: reaching a broker, topics, and the producer simulator.

The ``kafka_bootstrap`` fixture (conftest.py) provides the test run's own broker; the ``topic`` fixture
gives every test topics with a fresh suffix and deletes them afterwards.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pytest

from common import config
from common.errors import CourseError
from common.kafka import check_reachable, consume_all, end_offsets, ensure_topics, list_topics
from conftest import free_port, run_script, silent_listener
from data_generators import kafka_producer
from data_generators.generate_ad_events import make_ad_events

BASE = datetime(2025, 1, 15, 10, 30, tzinfo=timezone.utc)
BASE_TEXT = "2025-01-15T10:30:00Z"
# kafka-python 3.0 loads its protocol schemas with importlib.resources calls that Python 3.11 deprecates.
pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


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
                        "--malformed-every", "5", "--seed", "3", "--base-time", BASE_TEXT,
                        home=course_home, timeout=120)
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


@pytest.mark.kafka
def test_ensure_topics_is_idempotent_and_keeps_existing_partitions(kafka_bootstrap, topic):
    name = topic("idempotent")
    ensure_topics(kafka_bootstrap, [name], partitions=3)
    ensure_topics(kafka_bootstrap, [name, name], partitions=1)
    assert sorted(end_offsets(kafka_bootstrap, name)) == [0, 1, 2]
    assert name in list_topics(kafka_bootstrap)



"""Kafka producers on one real broker: the course's kafka-python settings against confluent-kafka.

N small messages in all, over several rounds (about 100 bytes of JSON, keyed, like the course's
events) sent as fast as each client can, timed from the first send until the broker has
acknowledged the last (``flush``). Each client gets a fresh topic with one partition. Messages
are built before the clock starts, so the figure is the client's and the broker's, not the JSON
encoder's.

- ``producer_msgs_per_s``: kafka-python with ``data_generators/kafka_producer.py``'s settings
  for a producer that races (``PRODUCER_SETTINGS`` and ``RACING_SETTINGS`` there).
- ``producer_confluent_msgs_per_s``: confluent-kafka (librdkafka, C) with its defaults plus
  the same acks.
- ``producer_kafka_python_<variant>_msgs_per_s`` (full run): what the course's settings were
  chosen from.
"""

from __future__ import annotations

import json
import time

from benchmarks.harness import Results, Stats

TOPIC = "bench-producer"
FLUSH_TIMEOUT = 300  # seconds for the last acknowledgement at worst
# What the course's settings were chosen against: kafka-python's own defaults, and linger only.
VARIANTS = {"client_defaults": {}, "linger_only": {"linger_ms": 5}}


def messages(count: int) -> list[tuple[bytes, bytes]]:
    """(key, value) pairs: a shop event's size and shape."""
    return [
        (
            f"user-{n % 500}".encode(),
            json.dumps(
                {
                    "event_id": f"EVT-{n:08d}",
                    "user_id": f"user-{n % 500}",
                    "event_type": "view",
                    "product_id": f"P{n % 50:03d}",
                    "price": 19.99,
                    "ts": "2025-01-15T10:00:00Z",
                }
            ).encode(),
        )
        for n in range(count)
    ]


def kafka_python_rate(
    bootstrap: str, topic: str, payload: list[tuple[bytes, bytes]], settings: dict
) -> float:
    """Messages per second through kafka-python with ``settings``, until all are acknowledged."""
    from kafka import KafkaProducer

    from infra.kafka import client_options

    producer = KafkaProducer(**client_options(bootstrap), **settings)
    try:
        producer.send(topic, key=b"warm-up", value=b"{}").get(
            timeout=30
        )  # metadata and connection first
        started = time.perf_counter()
        for key, value in payload:
            producer.send(topic, key=key, value=value)
        producer.flush(timeout=FLUSH_TIMEOUT)
        return len(payload) / (time.perf_counter() - started)
    finally:
        producer.close(timeout=10)


def confluent_rate(bootstrap: str, topic: str, payload: list[tuple[bytes, bytes]]) -> float:
    """Messages per second through confluent-kafka (librdkafka's defaults, acks=all)."""
    from confluent_kafka import Producer

    from infra.kafka_security import librdkafka_options

    producer = Producer({**librdkafka_options(bootstrap), "acks": "all"})
    producer.produce(topic, key=b"warm-up", value=b"{}")
    producer.flush(30)
    started = time.perf_counter()
    for key, value in payload:
        while True:
            try:
                producer.produce(topic, key=key, value=value)
                break
            except BufferError:  # the local queue is full: let it drain into the broker
                producer.poll(0.01)
        producer.poll(0)
    if producer.flush(FLUSH_TIMEOUT):
        raise RuntimeError("confluent-kafka: messages left unacknowledged")
    return len(payload) / (time.perf_counter() - started)


def run(results: Results, progress, bootstrap: str, size) -> None:
    import data_generators.kafka_producer as course_producer
    from infra.kafka import recreate_topics

    payload = messages(
        size.producer_messages // size.producer_rounds
    )  # the messages, split over the rounds
    course_settings = {**course_producer.PRODUCER_SETTINGS, **course_producer.RACING_SETTINGS}
    clients = {
        "kafka_python": lambda topic: kafka_python_rate(bootstrap, topic, payload, course_settings),
        "confluent": lambda topic: confluent_rate(bootstrap, topic, payload),
    }
    if size.candidates:
        clients.update(
            {
                f"kafka_python_{name}": (
                    lambda topic, s=settings: kafka_python_rate(bootstrap, topic, payload, s)
                )
                for name, settings in VARIANTS.items()
            }
        )
    rates: dict[str, list[float]] = {name: [] for name in clients}
    # Rounds alternate the clients, so a busy moment on the machine does not favour one.
    for round_number in range(size.producer_rounds):
        for name, send in clients.items():
            topic = f"{TOPIC}-{name.replace('_', '-')}"
            recreate_topics(bootstrap, [topic], 1)
            with progress.step(
                "producer", f"{name}, {len(payload):,} messages (round {round_number + 1})"
            ):
                rates[name].append(send(topic))
    for name, values in rates.items():
        key = {
            "kafka_python": "producer_msgs_per_s",
            "confluent": "producer_confluent_msgs_per_s",
        }.get(name, f"producer_{name}_msgs_per_s")
        results.put_median(key, Stats.of(values))

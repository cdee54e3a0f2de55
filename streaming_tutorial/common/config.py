"""Ports, hosts, topic names and fixed times shared by lessons and simulators.

One place, so a simulator and a lesson can never disagree on a port or a topic.
"""

import os
from datetime import datetime, timezone

# Socket lesson (05) and socket_server.py.
SOCKET_HOST = "127.0.0.1"
SOCKET_PORT = int(os.environ.get("SOCKET_PORT", "9999"))

# Kafka: when KAFKA_BOOTSTRAP_SERVERS is set, lessons use that cluster; otherwise they
# use (or start) the course's own single-node broker on these ports. The test suite runs
# a broker of its own on free ports (tests/conftest.py), never the learner's.
KAFKA_BOOTSTRAP_ENV = "KAFKA_BOOTSTRAP_SERVERS"
LOCAL_KAFKA_HOST = "127.0.0.1"
LOCAL_KAFKA_PORT_ENV = "LOCAL_KAFKA_PORT"
LOCAL_KAFKA_CONTROLLER_PORT_ENV = "LOCAL_KAFKA_CONTROLLER_PORT"
DEFAULT_LOCAL_KAFKA_PORT = 9092
DEFAULT_LOCAL_KAFKA_CONTROLLER_PORT = 9093
LOCAL_KAFKA_PORT = int(os.environ.get(LOCAL_KAFKA_PORT_ENV, DEFAULT_LOCAL_KAFKA_PORT))
LOCAL_KAFKA_CONTROLLER_PORT = int(
    os.environ.get(LOCAL_KAFKA_CONTROLLER_PORT_ENV, DEFAULT_LOCAL_KAFKA_CONTROLLER_PORT)
)
# The address docker-compose.yml publishes its broker on (the alternative to the course's own).
DOCKER_KAFKA_BOOTSTRAP = "localhost:9092"

# The Scala build of every JVM artifact the course fetches (Spark's connectors, Delta,
# the Kafka broker): it must match the Scala version pyspark is built with.
SCALA_BINARY = "2.13"

# Topics.
TOPIC_EVENTS = "events"  # raw keyed JSON events from kafka_producer.py
TOPIC_ENRICHED = "events-enriched"  # lesson 08's output
TOPIC_QUARANTINE = "events-quarantine"  # records lesson 08 could not parse
TOPIC_IMPRESSIONS = "ad-impressions"
TOPIC_CLICKS = "ad-clicks"
TOPIC_ALERTS = "alerts"

# The event time of the first sample record: fixed, so sample data and the
# output shown in docstrings are the same on every machine.
BASE_EVENT_TIME = datetime(2025, 1, 15, 10, 30, tzinfo=timezone.utc)


def local_kafka_port() -> int:
    """The local broker's client port, read when called (local_kafka.py --port and the tests set
    it late)."""
    return int(os.environ.get(LOCAL_KAFKA_PORT_ENV, DEFAULT_LOCAL_KAFKA_PORT))


def local_kafka_controller_port() -> int:
    return int(os.environ.get(LOCAL_KAFKA_CONTROLLER_PORT_ENV, DEFAULT_LOCAL_KAFKA_CONTROLLER_PORT))


def local_kafka_bootstrap() -> str:
    """host:port of the course's own broker."""
    return f"{LOCAL_KAFKA_HOST}:{local_kafka_port()}"

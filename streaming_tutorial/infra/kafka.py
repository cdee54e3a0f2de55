"""Talking to Kafka from lessons, simulators and tests: where the broker is, is it up, topics.

    bootstrap = bootstrap_servers()            # KAFKA_BOOTSTRAP_SERVERS, or the course's own broker
    check_reachable(bootstrap)                 # CourseError with advice when nothing answers
    ensure_topics(bootstrap, ["events"], partitions=3)
    ...spark.readStream.format("kafka").options(**spark_options(bootstrap))...
    KafkaProducer(**client_options(bootstrap), acks="all")

Which broker? ``KAFKA_BOOTSTRAP_SERVERS`` when it is set (your own cluster, Docker,
the test run's broker); otherwise the course's own broker at the host and port in
``common/config.py`` (``LOCAL_KAFKA_PORT`` changes the port). A secured cluster's
protocol, login and CA file come from the variables in ``infra/kafka_security.py``;
``spark_options`` and ``client_options`` carry them, so every Spark query and every
Python client of the course uses them the same way.

This module is a client only. Starting and stopping the course's broker, and "find or
start a broker for this lesson" (``kafka_for_lesson``), live in ``infra/kafka_broker.py``,
which uses this module, never the reverse.

The Python side uses kafka-python (``import kafka``; this module is ``infra.kafka``,
so the two never clash). Its retry chatter is silenced: a broker that is not there
gets one paragraph of advice (:class:`infra.errors.CourseError`), not a log storm.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import contextmanager
from typing import Iterable, Iterator

from common import config
from infra.errors import CourseError
from infra.kafka_security import client_options, spark_options  # noqa: F401 (spark_options: lessons ask infra.kafka)

REACH_TIMEOUT_SECONDS = 5.0
CLIENT_ID = "streaming-course"

# kafka-python logs every failed connection attempt. A NullHandler keeps Python's
# last-resort handler from printing them to the learner's terminal; a program that
# configures logging itself still sees them.
logging.getLogger("kafka").addHandler(logging.NullHandler())


def configured_bootstrap() -> str:
    """KAFKA_BOOTSTRAP_SERVERS as set by the user (or the test run), '' when unset."""
    return os.environ.get(config.KAFKA_BOOTSTRAP_ENV, "").strip()


def bootstrap_servers() -> str:
    """KAFKA_BOOTSTRAP_SERVERS if set, else the course's local broker
    (config.local_kafka_bootstrap())."""
    return configured_bootstrap() or config.local_kafka_bootstrap()


def security_options(bootstrap: str) -> dict[str, str]:
    """A secured cluster's login for Spark's Kafka source and sink, without the broker address.

    For a chain that names the address itself::

        .option("kafka.bootstrap.servers", bootstrap)
        .options(**security_options(bootstrap))

    The protocol, SASL login, CA file and KAFKA_OPTION_ settings the environment gives for
    KAFKA_BOOTSTRAP_SERVERS (``infra/kafka_security.py``); empty for any other address, such
    as the course's own broker, which speaks plaintext.
    """
    options = spark_options(bootstrap)
    return {name: value for name, value in options.items() if name != "kafka.bootstrap.servers"}


def unreachable_advice(bootstrap: str, detail: str = "") -> str:
    configured = configured_bootstrap()
    if configured and bootstrap == configured:
        where = (
            f"KAFKA_BOOTSTRAP_SERVERS is set to '{configured}', but no broker there answered. "
            "Check the address (host:port of a broker's listener) and, for a secured cluster, "
            "KAFKA_SECURITY_PROTOCOL and the KAFKA_SASL_/KAFKA_SSL_ variables (README, "
            "'Your own Kafka cluster'), or unset the variable to use the course's own broker."
        )
    else:
        where = (
            "Start the course's own broker with 'python local_kafka.py start' (it keeps running "
            "until 'python local_kafka.py stop'), or point KAFKA_BOOTSTRAP_SERVERS at a broker you "
            "already run (for Docker: 'docker compose up -d', then "
            f"KAFKA_BOOTSTRAP_SERVERS={config.DOCKER_KAFKA_BOOTSTRAP})."
        )
    return f"No Kafka broker answers at {bootstrap}. {where}" + (f" ({detail})" if detail else "")


def _addresses(bootstrap: str) -> list[tuple[str, int]]:
    addresses = []
    for part in bootstrap.split(","):
        host, _, port = part.strip().rpartition(":")
        if not host or not port.isdigit():
            raise CourseError(
                f"'{part.strip()}' is not a Kafka address: use host:port, "
                f"e.g. {config.local_kafka_bootstrap()} (several brokers separated by commas)."
            )
        addresses.append((host.strip("[]"), int(port)))
    return addresses


def _any_port_open(bootstrap: str, timeout: float) -> bool:
    from infra.simulators import port_open

    return any(
        port_open(host, port, timeout=min(timeout, 1.0)) for host, port in _addresses(bootstrap)
    )


def admin_client(bootstrap: str, timeout: float = REACH_TIMEOUT_SECONDS):
    """A kafka-python admin client, or CourseError within about ``timeout`` seconds."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    # A closed port refuses at once: say so without waiting for the client's bootstrap timeout.
    if not _any_port_open(bootstrap, timeout):
        raise CourseError(unreachable_advice(bootstrap, "connection refused"))
    try:
        return KafkaAdminClient(
            **client_options(bootstrap),
            client_id=CLIENT_ID,
            bootstrap_timeout_ms=int(timeout * 1000),
            request_timeout_ms=int(max(timeout, 5.0) * 1000),
        )
    except KafkaError as error:
        raise CourseError(
            unreachable_advice(bootstrap, f"{type(error).__name__}: {error}")
        ) from error


def describe_cluster(bootstrap: str, timeout: float = REACH_TIMEOUT_SECONDS) -> dict:
    """The cluster's id and brokers; CourseError when nothing answers the Kafka protocol."""
    from kafka.errors import KafkaError

    admin = admin_client(bootstrap, timeout)
    try:
        return admin.describe_cluster()
    except KafkaError as error:
        raise CourseError(
            unreachable_advice(bootstrap, f"{type(error).__name__}: {error}")
        ) from error
    finally:
        admin.close()


def check_reachable(bootstrap: str, timeout: float = REACH_TIMEOUT_SECONDS) -> None:
    """Raise CourseError (with what to do) unless a Kafka broker answers at ``bootstrap``."""
    cluster = describe_cluster(bootstrap, timeout)
    if not cluster.get("brokers"):
        raise CourseError(unreachable_advice(bootstrap, "the cluster reports no live broker yet"))


def answers(bootstrap: str, timeout: float = 3.0) -> bool:
    """True when a Kafka broker (not just any program) answers at ``bootstrap``."""
    try:
        check_reachable(bootstrap, timeout)
    except CourseError:
        return False
    return True


def list_topics(bootstrap: str, *, internal: bool = False) -> list[str]:
    admin = admin_client(bootstrap)
    try:
        names = admin.list_topics()
    finally:
        admin.close()
    return sorted(name for name in names if internal or not name.startswith("__"))


def ensure_topics(
    bootstrap: str,
    topics: Iterable[str],
    partitions: int = 1,
    configs: dict[str, str] | None = None,
) -> None:
    """Create the topics that do not exist yet (idempotent), with the topic ``configs`` given;
    wait until each has a leader.

    Existing topics are left as they are, whatever their partition count or configs.
    """
    from kafka.errors import TopicAlreadyExistsError

    wanted = list(dict.fromkeys(topics))
    admin = admin_client(bootstrap)
    try:
        missing = [name for name in wanted if name not in set(admin.list_topics())]
        if missing:
            # replication_factor -1 = the broker's default: 1 on the course's broker, the
            # cluster's own choice elsewhere.
            request = {
                name: {
                    "num_partitions": partitions,
                    "replication_factor": -1,
                    "configs": configs or {},
                }
                for name in missing
            }
            try:
                admin.create_topics(request, timeout_ms=30000)
            except TopicAlreadyExistsError:
                pass  # someone else (a lesson, the producer) created it at the same moment
        admin.wait_for_topics(wanted, timeout_ms=30000)
    finally:
        admin.close()


def delete_topics(bootstrap: str, topics: Iterable[str]) -> None:
    """Delete the topics that exist (tests clean up their per-run topics with this)."""
    admin = admin_client(bootstrap)
    try:
        existing = set(admin.list_topics())
        doomed = [name for name in topics if name in existing]
        if doomed:
            admin.delete_topics(doomed, timeout_ms=30000)
    finally:
        admin.close()


def recreate_topics(
    bootstrap: str,
    topics: Iterable[str],
    partitions: int = 1,
    timeout: float = 60.0,
    configs: dict[str, str] | None = None,
) -> None:
    """Delete the topics and create them empty again (a lesson's --reset), with ``configs``."""
    wanted = list(dict.fromkeys(topics))
    delete_topics(bootstrap, wanted)
    # Deletion finishes in the background; creating a topic that is still being deleted fails.
    deadline = time.monotonic() + timeout
    while set(wanted) & set(list_topics(bootstrap)):
        if time.monotonic() > deadline:
            raise CourseError(
                f"Kafka did not finish deleting {', '.join(wanted)} within {timeout:.0f} s; "
                "try again."
            )
        time.sleep(0.2)
    ensure_topics(bootstrap, wanted, partitions=partitions, configs=configs)


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """{partition: next offset} of ``topic``: how many messages each partition holds (no
    compaction here)."""
    consumer = _consumer(bootstrap)
    try:
        partitions = _partitions(consumer, topic)
        return {tp.partition: offset for tp, offset in consumer.end_offsets(partitions).items()}
    finally:
        consumer.close()


def consume_all(bootstrap: str, topic: str, timeout: float = 60.0) -> list:
    """Every record of ``topic`` from the beginning up to its current end, by (partition, offset).

    Stops when each partition's position reaches the end offset measured at the start,
    so the result is exact, not "whatever arrived within a few seconds".
    """
    consumer = _consumer(bootstrap)
    try:
        partitions = _partitions(consumer, topic)
        ends = consumer.end_offsets(partitions)
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        records = []
        deadline = time.monotonic() + timeout
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"could not read {topic} up to its end offsets within {timeout} s"
                )
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(record for record in batch if record.offset < ends[_tp(record)])
        return sorted(records, key=lambda record: (record.partition, record.offset))
    finally:
        consumer.close()


def _tp(record):
    from kafka import TopicPartition

    return TopicPartition(record.topic, record.partition)


def _consumer(bootstrap: str):
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    admin_client(bootstrap).close()  # fail fast, with advice, when no broker is there
    try:
        return KafkaConsumer(
            **client_options(bootstrap),
            client_id=CLIENT_ID,
            group_id=None,  # no consumer group: we assign partitions ourselves and commit nothing
            enable_auto_commit=False,
            bootstrap_timeout_ms=int(REACH_TIMEOUT_SECONDS * 1000),
        )
    except KafkaError as error:
        raise CourseError(
            unreachable_advice(bootstrap, f"{type(error).__name__}: {error}")
        ) from error


def _partitions(consumer, topic: str) -> list:
    from kafka import TopicPartition

    numbers = consumer.partitions_for_topic(topic)
    if not numbers:
        raise CourseError(
            f"Kafka topic '{topic}' does not exist at {consumer.config['bootstrap_servers']}."
        )
    return [TopicPartition(topic, number) for number in sorted(numbers)]


# (exact texts that identify one failure, advice): the fixed opening of Spark's
# KAFKA_DATA_LOSS error (all its variants; the condition's name itself is not always in the
# text), Kafka's exception names and fixed parts of Kafka's messages, never loose words.
KNOWN_FAILURES = (
    (
        (
            "Some data may have been lost because they are not available in Kafka any more",
            "KAFKA_DATA_LOSS",
        ),
        "The topic no longer holds the offsets this query's checkpoint recorded: it was deleted "
        "and created again (for example by 'python local_kafka.py reset', or lesson 08's --reset "
        "while another lesson kept its checkpoint), or Kafka's retention removed old records, "
        "after the query last ran. Spark stops rather than silently skip records, and this "
        "checkpoint cannot go on from offsets that no longer exist. Run the lesson again with "
        "--reset: it deletes the lesson's checkpoints and output (lesson 08 also empties its "
        "topics), so the query forgets what it had read and written and starts over from what the "
        "topic holds now.",
    ),
    (
        ("UnknownTopicOrPartitionException",),
        "A topic the query reads or writes does not exist (any more). The lessons create their "
        "topics before starting; if you deleted one while the lesson ran, run it again.",
    ),
    (
        ("not present in metadata after",),
        "Kafka could not tell Spark where a topic lives: the topic does not exist and the broker "
        "does not create topics on first use, or the broker stopped answering. Check it with "
        "'python local_kafka.py status' and 'python local_kafka.py topics', then run the lesson "
        "again.",
    ),
    (
        ("Timed out waiting for a node assignment", "expired before the position for partition"),
        "Spark lost its connection to the Kafka broker. Check that it still runs "
        "('python local_kafka.py status') and run the lesson again.",
    ),
)


def explain_failure(error: BaseException) -> str | None:
    """Advice for a Kafka failure we recognise in a query's error, or None."""
    text = str(error)
    for needles, advice in KNOWN_FAILURES:
        if any(needle in text for needle in needles):
            first_line = (
                text.strip().splitlines()[0][:300] if text.strip() else type(error).__name__
            )
            return f"{advice} (Spark said: {first_line})"
    return None


@contextmanager
def explain_failures() -> Iterator[None]:
    """Turn a recognised Kafka failure inside the block into a CourseError with advice."""
    try:
        yield
    except CourseError:
        raise
    except (
        Exception
    ) as error:  # Spark raises StreamingQueryException/Py4JJavaError: no narrower type
        advice = explain_failure(error)
        if advice is None:
            raise
        raise CourseError(advice) from error

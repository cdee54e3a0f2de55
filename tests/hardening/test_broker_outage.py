"""A Kafka broker outage under a running query (Kafka -> Delta): it waits, or fails with the
course's advice; after the broker is back (and a restart from the checkpoint), every message is in
the table once.

A broker of its own (free ports, data in the test's folder), never the suite's shared one: the test
stops it twice. Messages are produced before, during (a producer keeps them while the broker is down
and delivers them once it is back) and after each outage, and counted by id in the Delta table:

- a short outage: the broker is stopped and started again while the query runs. The query waits (its
  offset requests retry for Kafka's default.api.timeout.ms, a minute) and goes on by itself;
- a long outage: the query gives up and fails. Spark tries three times to get the latest offsets,
  each attempt waiting Kafka's default.api.timeout.ms (a minute: about three minutes with the
  defaults); this query asks for 3 s so it fails in about ten seconds, with the same error ("Timed
  out waiting for a node assignment"). ``infra.kafka.explain_failure`` turns it into the course's
  advice; the broker comes back and a restart on the same checkpoint reads on from where the query
  stopped.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import lesson16_crash_harness as crash
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

from common import config
from conftest import free_port
from infra import kafka_broker
from infra.kafka import ensure_topics, explain_failure
from infra.runner import stop_between_batches

TOPIC = "outage"
PARTITIONS = 2
PER_PHASE = 20  # messages produced in each phase
# The long outage's query: Kafka's clients give up after 3 s instead of 60 s (and Spark retries at
# once).
GIVE_UP_SOON = {
    "kafka.default.api.timeout.ms": "3000",
    "kafka.request.timeout.ms": "3000",
    "fetchOffset.retryIntervalMs": "100",
}
FAILURE_TIMEOUT_SECONDS = (
    120  # how long the long outage's query may take to fail (about 10 s when idle)
)

# kafka-python 3.0 loads its protocol schemas with importlib.resources calls that Python 3.11
# deprecates.
pytestmark = [
    pytest.mark.crash,
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


class Broker:
    """A LocalBroker of the test's own that can be stopped and started again on the same data."""

    def __init__(self, home):
        host = config.LOCAL_KAFKA_HOST
        port = free_port(host)
        controller_port = free_port(host)
        while controller_port == port:
            controller_port = free_port(host)
        self.broker = kafka_broker.LocalBroker(
            port=port, controller_port=controller_port, home=home
        )
        self.process = None

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def start(self) -> None:
        self.process = kafka_broker.start(self.broker, say=lambda text: None)
        assert self.process is not None, (
            f"something else answered on the free port {self.broker.port}"
        )

    def stop(self) -> None:
        kafka_broker.stop(self.broker, process=self.process)
        self.process = None


@contextmanager
def own_broker(home):
    broker = Broker(home)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


class Producer:
    """Sends numbered messages (key and value "M-0001", ...); a send while the broker is down waits
    in the producer until the broker is back (idempotent: a retried send is written once)."""

    def __init__(self, bootstrap: str):
        from kafka import KafkaProducer

        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            enable_idempotence=True,
            reconnect_backoff_max_ms=1000,  # back soon after the broker is
            request_timeout_ms=10000,
            delivery_timeout_ms=600000,
        )
        self.futures, self.ids = [], []

    def send(self, first: int, count: int = PER_PHASE) -> None:
        for number in range(first, first + count):
            message_id = f"M-{number:04d}".encode()
            self.futures.append(self.producer.send(TOPIC, key=message_id, value=message_id))
            self.ids.append(message_id.decode())

    def delivered(self) -> None:
        """Wait until every message sent so far is acknowledged (raises if one was not)."""
        self.producer.flush(timeout=300)
        for future in self.futures:
            future.get(timeout=60)

    def close(self) -> None:
        from kafka.errors import KafkaTimeoutError

        try:
            self.producer.close(timeout=5)
        except (
            KafkaTimeoutError
        ):  # unsent messages after a failure with the broker down: that failure is the news
            pass


def start_copy(spark, bootstrap: str, table, checkpoint, options: dict | None = None):
    """Kafka -> Delta (each message's id), as lesson 08 reads a topic; the Delta sink commits a
    batch once."""
    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .options(**(options or {}))
        .load()
    )
    return (
        raw.select(F.col("value").cast("string").alias("message_id"), "partition", "offset")
        .writeStream.format("delta")
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="1 second")
        .start(str(table))
    )


def asking_for_offsets(query) -> bool:
    """The query is inside a trigger, waiting for the source's latest offsets (MicroBatchExecution's
    status)."""
    status = query.status
    return status["isTriggerActive"] and status["message"].startswith("Getting offsets from")


def test_a_broker_outage_is_waited_out_or_explained_and_a_restart_loses_and_duplicates_nothing(
    spark, tmp_path
):
    table, checkpoint = tmp_path / "messages", tmp_path / "checkpoint"

    def read_ids() -> list[str]:
        return [
            row[0]
            for row in spark.read.format("delta").load(str(table)).select("message_id").collect()
        ]

    with own_broker(tmp_path / "kafka") as broker:
        ensure_topics(broker.bootstrap, [TOPIC], partitions=PARTITIONS)
        producer = Producer(broker.bootstrap)
        try:
            producer.send(1)  # before
            producer.delivered()
            query = start_copy(spark, broker.bootstrap, table, checkpoint)
            query.processAllAvailable()
            assert sorted(read_ids()) == producer.ids

            # A short outage: the query waits for the broker and goes on by itself.
            broker.stop()
            producer.send(1 + PER_PHASE)  # during: kept by the producer
            crash.wait_until(
                lambda: asking_for_offsets(query),
                "the query asking the stopped broker for offsets",
                60,
            )
            broker.start()
            producer.delivered()
            producer.send(1 + 2 * PER_PHASE)  # after
            producer.delivered()
            query.processAllAvailable()
            assert query.isActive and query.exception() is None
            assert crash.tally(producer.ids, read_ids()) == crash.Tally(0, 0, 0)
            stop_between_batches(query)

            # A long outage: the query gives up, with an error the course explains.
            query = start_copy(spark, broker.bootstrap, table, checkpoint, GIVE_UP_SOON)
            query.processAllAvailable()
            broker.stop()
            producer.send(1 + 3 * PER_PHASE)  # during
            started = time.monotonic()
            with pytest.raises(StreamingQueryException) as failure:
                query.awaitTermination(
                    FAILURE_TIMEOUT_SECONDS
                )  # raises the query's error once it failed
            print(
                f"the query failed {time.monotonic() - started:.0f} s into the outage: "
                f"{str(failure.value).splitlines()[0][:300]}"
            )
            advice = explain_failure(failure.value)
            assert advice is not None, f"no course advice for: {failure.value}"
            assert advice.startswith("Spark lost its connection to the Kafka broker."), advice

            # The broker back, a restart on the same checkpoint: every message once.
            broker.start()
            producer.delivered()
            query = start_copy(spark, broker.bootstrap, table, checkpoint)
            producer.send(1 + 4 * PER_PHASE)  # after
            producer.delivered()
            query.processAllAvailable()
            stop_between_batches(query)
        finally:
            producer.close()
            for (
                running
            ) in spark.streams.active:  # a failed assertion leaves none behind for the next test
                running.stop()
    counted = crash.tally(producer.ids, read_ids())
    print(f"{len(producer.ids)} messages produced before, during and after two outages: {counted}")
    assert (len(producer.ids), counted) == (5 * PER_PHASE, crash.Tally(0, 0, 0))

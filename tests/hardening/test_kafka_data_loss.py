"""Kafka deletes records a query has not read yet (retention, a topic recreated, or here an explicit
delete-records call), and what the Kafka source does about it on the next run from its checkpoint:

- ``failOnDataLoss`` true (the default): the query fails and names the option;
- ``failOnDataLoss`` false: it skips the deleted range and reads on; those records are gone for it.

And where the source's progress lives: in the checkpoint only. Spark commits no offsets to a Kafka
consumer group, even one named with ``kafka.group.id``, so a lag tool that reads consumer groups
sees nothing of the query (lesson 14 computes lag from the query's own progress).

In the crash lane with the other broker failures: two more queries and a Kafka round trip.
"""

from __future__ import annotations

import shutil

import pytest
from pyspark.errors import StreamingQueryException

from infra.kafka import admin_client, ensure_topics
from infra.runner import finish

pytestmark = [
    pytest.mark.crash,
    pytest.mark.kafka,
    # kafka-python 3.0 loads its protocol schemas with importlib.resources calls that Python 3.11
    # deprecates.
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]

GROUP = "course-lag-check"  # the consumer group the lenient query names
CONTROL_GROUP = "course-committing-consumer"  # a plain consumer's group, which commits


def produce(spark, bootstrap: str, topic: str, numbers: range) -> None:
    """Messages M-000, M-001, ... to one partition, with Spark's batch Kafka writer."""
    (
        spark.createDataFrame([(f"M-{n:03d}",) for n in numbers], "value STRING")
        # One task sends them all, in order: the offsets follow the numbers.
        .coalesce(1)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .save()
    )


def commit_offsets(bootstrap: str, topic: str, group: str) -> None:
    """What a plain Kafka consumer in ``group`` does: read the topic, commit its position."""
    from kafka import KafkaConsumer

    from infra.kafka import client_options

    consumer = KafkaConsumer(
        topic,
        **client_options(bootstrap),
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=10_000,
    )
    try:
        next(iter(consumer))
        consumer.commit()
    finally:
        consumer.close()


def read_available(spark, bootstrap: str, topic: str, checkpoint, **options) -> list[str]:
    """One availableNow run of a Kafka query on ``checkpoint``: the values it read, in order."""
    seen: list[str] = []

    def collect(batch, batch_id: int) -> None:
        seen.extend(row.value for row in batch.orderBy("offset").collect())

    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    for name, value in options.items():
        reader = reader.option(name, value)
    query = (
        reader.load()
        .selectExpr("CAST(value AS STRING) AS value", "offset")
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    finish([query])
    return seen


def test_records_deleted_before_the_query_read_them_fail_it_or_are_skipped(
    spark, kafka_bootstrap, topic, tmp_path
):
    from kafka import TopicPartition

    name = topic("data-loss")
    ensure_topics(kafka_bootstrap, [name], partitions=1)
    produce(spark, kafka_bootstrap, name, range(10))
    strict, lenient = tmp_path / "strict", tmp_path / "lenient"
    first = read_available(spark, kafka_bootstrap, name, strict)
    assert first == [f"M-{n:03d}" for n in range(10)]
    shutil.copytree(strict, lenient)  # the same progress, for the second way

    # Ten more, then Kafka deletes everything before offset 15: M-010..M-014 were never read.
    produce(spark, kafka_bootstrap, name, range(10, 20))
    admin = admin_client(kafka_bootstrap)
    try:
        admin.delete_records({TopicPartition(name, 0): 15})

        # The default: the next run needs offset 10, which is gone, and the query fails.
        with pytest.raises(StreamingQueryException) as failure:
            read_available(spark, kafka_bootstrap, name, strict)
        assert "failOnDataLoss" in str(failure.value)

        # failOnDataLoss=false: the same checkpoint's next run starts at the earliest record left.
        rest = read_available(
            spark,
            kafka_bootstrap,
            name,
            lenient,
            failOnDataLoss="false",
            **{"kafka.group.id": GROUP},
        )
        assert rest == [f"M-{n:03d}" for n in range(15, 20)]

        # A consumer that commits, for comparison: the broker lists its group. Spark's is absent.
        commit_offsets(kafka_bootstrap, name, CONTROL_GROUP)
        groups = {group["group_id"] for group in admin.list_groups()}
        assert CONTROL_GROUP in groups
        assert GROUP not in groups
    finally:
        admin.close()

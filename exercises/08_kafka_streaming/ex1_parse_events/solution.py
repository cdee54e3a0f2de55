"""Exercise 08.1 · Parse Kafka events — a reference solution."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import parsing
from common.schemas import ECOMMERCE_EVENT_SCHEMA


def parse_events(messages: DataFrame) -> DataFrame:
    """Kafka rows -> the event's fields, where it came from, and why it cannot be used (or null)."""
    # Kafka's keys and values are bytes: cast them to text. Topic, partition, offset and
    # timestamp say where each message came from; a bad record keeps them, so it can be found.
    text = messages.select(
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"),
        F.col("topic").alias("source_topic"),
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    )
    # from_json with a schema, PERMISSIVE: a value that does not fit keeps its row and its text,
    # with null fields and a quarantine_reason. No filter here: dropping it would lose it.
    return parsing.parse_json(text, ECOMMERCE_EVENT_SCHEMA)

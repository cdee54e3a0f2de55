"""A known mistake: the values that cannot be used are filtered out, so they are lost."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import parsing
from common.schemas import ECOMMERCE_EVENT_SCHEMA


def parse_events(messages: DataFrame) -> DataFrame:
    text = messages.select(
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"),
        F.col("topic").alias("source_topic"),
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    )
    parsed = parsing.parse_json(text, ECOMMERCE_EVENT_SCHEMA)
    return parsed.where(F.col("quarantine_reason").isNull())

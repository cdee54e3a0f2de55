"""A known mistake: from_json alone: a bad value becomes a row of nulls, with no reason."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

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
    parsed = text.withColumn("event", F.from_json(F.col("value"), ECOMMERCE_EVENT_SCHEMA))
    return parsed.select(*text.columns, "event.*")

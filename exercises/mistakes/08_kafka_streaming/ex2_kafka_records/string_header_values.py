"""A known mistake: the header values left as strings; Kafka's header values are bytes."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SCHEMA_VERSION = "2"


def to_kafka_records(events: DataFrame) -> DataFrame:
    headers = F.array(
        F.struct(F.lit("event-type").alias("key"), F.col("event_type").alias("value")),
        F.struct(F.lit("schema-version").alias("key"), F.lit(SCHEMA_VERSION).alias("value")),
    )
    return events.select(
        F.col("user_id").alias("key"),
        F.to_json(F.struct(*events.columns), {"ignoreNullFields": "false"}).alias("value"),
        headers.alias("headers"),
    )

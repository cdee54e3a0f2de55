"""A known mistake: the headers as a map from name to bytes, which the Kafka sink refuses."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SCHEMA_VERSION = "2"


def to_kafka_records(events: DataFrame) -> DataFrame:
    headers = F.create_map(
        F.lit("event-type"),
        F.col("event_type").cast("binary"),
        F.lit("schema-version"),
        F.lit(SCHEMA_VERSION).cast("binary"),
    )
    return events.select(
        F.col("user_id").alias("key"),
        F.to_json(F.struct(*events.columns), {"ignoreNullFields": "false"}).alias("value"),
        headers.alias("headers"),
    )

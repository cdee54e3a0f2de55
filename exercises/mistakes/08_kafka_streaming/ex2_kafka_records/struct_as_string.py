"""A known mistake: the sink refused a struct value, so the struct was cast to string: text like
'{E1, U1, view, ...}', not JSON."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SCHEMA_VERSION = "2"


def to_kafka_records(events: DataFrame) -> DataFrame:
    headers = F.array(
        F.struct(
            F.lit("event-type").alias("key"), F.col("event_type").cast("binary").alias("value")
        ),
        F.struct(
            F.lit("schema-version").alias("key"),
            F.lit(SCHEMA_VERSION).cast("binary").alias("value"),
        ),
    )
    return events.select(
        F.col("user_id").alias("key"),
        F.struct(*events.columns).cast("string").alias("value"),
        headers.alias("headers"),
    )

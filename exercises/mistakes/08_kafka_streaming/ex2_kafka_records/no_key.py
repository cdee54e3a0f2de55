"""A known mistake: no key column, so the sink writes every record with a null key."""

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
        F.to_json(F.struct(*events.columns), {"ignoreNullFields": "false"}).alias("value"),
        headers.alias("headers"),
    )

"""Exercise 08.2 · Kafka records with headers — a reference solution."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SCHEMA_VERSION = "2"  # the value's layout: a consumer reads this header before parsing the value


def to_kafka_records(events: DataFrame) -> DataFrame:
    """Each event as a Kafka record: key (user_id), value (JSON), headers (event-type,
    schema-version)."""
    # The Kafka sink wants headers as array<struct<key: string, value: binary>>: an ordered
    # list (a key may repeat), each value bytes. cast("binary") gives a string's UTF-8 bytes.
    headers = F.array(
        F.struct(
            F.lit("event-type").alias("key"),
            F.col("event_type").cast("binary").alias("value"),
        ),
        F.struct(
            F.lit("schema-version").alias("key"),
            F.lit(SCHEMA_VERSION).cast("binary").alias("value"),
        ),
    )
    return events.select(
        # The key picks the partition: one user's events land in one partition, in order.
        F.col("user_id").alias("key"),
        # to_json leaves a null field out by default; ignoreNullFields=false writes it as null.
        F.to_json(F.struct(*events.columns), {"ignoreNullFields": "false"}).alias("value"),
        headers.alias("headers"),
    )

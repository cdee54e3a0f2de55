"""Another right answer: the key as bytes (encode to UTF-8: the very bytes a string key is
written as), the header values with encode() and a Python bytes literal, and the struct built
from a list of columns."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SCHEMA_VERSION = "2"


def to_kafka_records(events: DataFrame) -> DataFrame:
    headers = F.array(
        F.struct(
            F.lit("event-type").alias("key"),
            F.encode("event_type", "UTF-8").alias("value"),
        ),
        F.struct(
            F.lit("schema-version").alias("key"),
            F.lit(SCHEMA_VERSION.encode()).alias("value"),
        ),
    )
    event = F.struct(*[F.col(name) for name in events.columns])
    return events.select(
        F.encode("user_id", "UTF-8").alias("key"),
        F.to_json(event, {"ignoreNullFields": "false"}).alias("value"),
        headers.alias("headers"),
    )

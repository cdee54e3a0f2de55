"""Another right answer: the same casts and names in SQL (CAST(key AS STRING) ...) via selectExpr,
and parse_json told which columns to keep (columns=...), which keeps the same six in the same
order. A cast of bytes to string keeps invalid UTF-8 for parse_json to spot."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

from common import parsing  # noqa: F401  (you will need it)
from common.schemas import ECOMMERCE_EVENT_SCHEMA  # noqa: F401  (you will need it)


def parse_events(messages: DataFrame) -> DataFrame:
    """Kafka rows -> the event's fields, where it came from, and why it cannot be used (or null)."""
    text = messages.selectExpr(
        "CAST(key AS STRING) AS key",
        "CAST(value AS STRING) AS value",
        "topic AS source_topic",
        "`partition` AS source_partition",
        "`offset` AS source_offset",
        "`timestamp` AS kafka_timestamp",
    )
    kept = [
        "key",
        "value",
        "source_topic",
        "source_partition",
        "source_offset",
        "kafka_timestamp",
    ]
    return parsing.parse_json(text, ECOMMERCE_EVENT_SCHEMA, columns=kept)

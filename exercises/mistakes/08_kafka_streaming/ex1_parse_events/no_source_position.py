"""A known mistake: only the key and the value are kept, so a bad record cannot be found."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import parsing
from common.schemas import ECOMMERCE_EVENT_SCHEMA


def parse_events(messages: DataFrame) -> DataFrame:
    text = messages.select(
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"),
    )
    return parsing.parse_json(text, ECOMMERCE_EVENT_SCHEMA)

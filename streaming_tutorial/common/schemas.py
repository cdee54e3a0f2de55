"""The schemas of every dataset in the course, in one place.

Streaming file and Kafka sources cannot infer a schema from data that has not
arrived yet, so each lesson reads with one of these, and each simulator writes
records that match them (the tests check that they agree).

A field with ``nullable=False`` is required: ``parsing.parse_json`` quarantines a
record without it (the file and Kafka readers themselves treat every field as nullable).
A numeric field's metadata may state its range, ``{"min": ...}`` and/or ``{"max": ...}``
(inclusive): a record outside it is quarantined too ("amount below 0"). Ranges are
stated only where they are beyond doubt: money and counts are never negative, a
relative humidity is a percentage.
"""

from pyspark.sql.types import (
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

AT_LEAST_ZERO = {"min": 0}  # an amount, a price, a quantity
PERCENTAGE = {"min": 0, "max": 100}

# data/input_stream: payment transactions (simulate_file_data.py).
TRANSACTION_SCHEMA = StructType(
    [
        StructField("transaction_id", StringType(), nullable=False),
        StructField("user_id", StringType(), nullable=False),
        StructField("amount", DoubleType(), nullable=False, metadata=AT_LEAST_ZERO),
        StructField("category", StringType()),
        StructField("timestamp", TimestampType(), nullable=False),
    ]
)

# data/ecommerce_events: the view -> cart -> purchase funnel (generate_ecommerce_events.py).
ECOMMERCE_EVENT_SCHEMA = StructType(
    [
        StructField("event_id", StringType(), nullable=False),
        StructField("user_id", StringType(), nullable=False),
        StructField("event_type", StringType(), nullable=False),  # view | cart | purchase
        StructField("product_id", StringType()),
        StructField("product_name", StringType()),
        StructField("category", StringType()),
        StructField("price", DoubleType(), metadata=AT_LEAST_ZERO),
        StructField("quantity", IntegerType(), metadata=AT_LEAST_ZERO),
        StructField("timestamp", TimestampType(), nullable=False),
    ]
)

# data/sensor_readings: temperature readings, some late and out of order.
SENSOR_SCHEMA = StructType(
    [
        StructField("reading_id", LongType(), nullable=False),
        StructField("sensor_id", StringType(), nullable=False),
        StructField("temperature", DoubleType()),
        StructField("humidity", DoubleType(), metadata=PERCENTAGE),
        StructField("event_time", TimestampType(), nullable=False),
    ]
)

# Ad impressions and clicks (lesson 09's stream-stream join).
IMPRESSION_SCHEMA = StructType(
    [
        StructField("impression_id", StringType(), nullable=False),
        StructField("ad_id", StringType()),
        StructField("user_id", StringType()),
        StructField("impression_time", TimestampType(), nullable=False),
    ]
)

CLICK_SCHEMA = StructType(
    [
        StructField("click_id", StringType(), nullable=False),
        StructField("impression_id", StringType(), nullable=False),
        StructField("ad_id", StringType()),
        StructField("user_id", StringType()),
        StructField("click_time", TimestampType(), nullable=False),
    ]
)

# data/reference/products.csv: the static product catalogue (lesson 09's stream-static join).
PRODUCT_SCHEMA = StructType(
    [
        StructField("product_id", StringType()),
        StructField("product_name", StringType()),
        StructField("category", StringType()),
        StructField("list_price", DoubleType()),
    ]
)

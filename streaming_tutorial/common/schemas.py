"""The schemas of every dataset in the course, in one place.

Streaming file and Kafka sources cannot infer a schema from data that has not
arrived yet, so each lesson reads with one of these, and each simulator writes
records that match them (the tests check that they agree).
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

# data/input_stream: payment transactions (simulate_file_data.py).
TRANSACTION_SCHEMA = StructType(
    [
        StructField("transaction_id", StringType()),
        StructField("user_id", StringType()),
        StructField("amount", DoubleType()),
        StructField("category", StringType()),
        StructField("timestamp", TimestampType()),
    ]
)

# data/ecommerce_events: the view -> cart -> purchase funnel (generate_ecommerce_events.py).
ECOMMERCE_EVENT_SCHEMA = StructType(
    [
        StructField("event_id", StringType()),
        StructField("user_id", StringType()),
        StructField("event_type", StringType()),  # view | cart | purchase
        StructField("product_id", StringType()),
        StructField("product_name", StringType()),
        StructField("category", StringType()),
        StructField("price", DoubleType()),
        StructField("quantity", IntegerType()),
        StructField("timestamp", TimestampType()),
    ]
)

# data/sensor_readings: temperature readings, some late and out of order.
SENSOR_SCHEMA = StructType(
    [
        StructField("reading_id", LongType()),
        StructField("sensor_id", StringType()),
        StructField("temperature", DoubleType()),
        StructField("humidity", DoubleType()),
        StructField("event_time", TimestampType()),
    ]
)

# Ad impressions and clicks (lesson 09's stream-stream join).
IMPRESSION_SCHEMA = StructType(
    [
        StructField("impression_id", StringType()),
        StructField("ad_id", StringType()),
        StructField("user_id", StringType()),
        StructField("impression_time", TimestampType()),
    ]
)

CLICK_SCHEMA = StructType(
    [
        StructField("click_id", StringType()),
        StructField("impression_id", StringType()),
        StructField("ad_id", StringType()),
        StructField("user_id", StringType()),
        StructField("click_time", TimestampType()),
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

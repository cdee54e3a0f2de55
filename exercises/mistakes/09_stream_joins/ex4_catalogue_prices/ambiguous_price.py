"""A known mistake: joined as they are, both sides' price (and product_name) columns come out,
and selecting "price" is ambiguous."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

CATALOGUE_SCHEMA = "product_id STRING, product_name STRING, category STRING, price DOUBLE"


def enrich_events(events: DataFrame, products: DataFrame) -> DataFrame:
    joined = events.join(products, on="product_id", how="left_outer")
    return joined.select(
        "event_id",
        "product_id",
        "quantity",
        F.col("price").alias("paid_price"),
        "product_name",
        F.col("price").alias("list_price"),
        ((F.col("list_price") - F.col("paid_price")) * F.col("quantity")).alias("discount"),
    )

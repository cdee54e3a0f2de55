"""A known mistake: the product's name taken from the event (what the page showed) instead of
the catalogue."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

CATALOGUE_SCHEMA = "product_id STRING, product_name STRING, category STRING, price DOUBLE"


def enrich_events(events: DataFrame, products: DataFrame) -> DataFrame:
    paid = events.select(
        "event_id", "product_id", "product_name", "quantity", F.col("price").alias("paid_price")
    )
    catalogue = products.select("product_id", F.col("price").alias("list_price"))
    return (
        paid.join(catalogue, on="product_id", how="left_outer")
        .withColumn("discount", (F.col("list_price") - F.col("paid_price")) * F.col("quantity"))
        .select(
            "event_id",
            "product_id",
            "quantity",
            "paid_price",
            "product_name",
            "list_price",
            "discount",
        )
    )

"""A known mistake: the catalogue on the left of the left outer join and the stream on the
right, which Spark refuses."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

CATALOGUE_SCHEMA = "product_id STRING, product_name STRING, category STRING, price DOUBLE"


def enrich_events(events: DataFrame, products: DataFrame) -> DataFrame:
    paid = events.select("event_id", "product_id", "quantity", F.col("price").alias("paid_price"))
    catalogue = products.select("product_id", "product_name", F.col("price").alias("list_price"))
    return (
        catalogue.join(paid, on="product_id", how="left_outer")
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

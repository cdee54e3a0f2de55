"""A known mistake: the catalogue collected into Python once, when the query is built, and
looked up from map literals: every batch sees the catalogue as it was then."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

CATALOGUE_SCHEMA = "product_id STRING, product_name STRING, category STRING, price DOUBLE"


def enrich_events(events: DataFrame, products: DataFrame) -> DataFrame:
    rows = products.collect()
    names = F.create_map(
        *[F.lit(value) for row in rows for value in (row.product_id, row.product_name)]
    )
    prices = F.create_map(*[F.lit(value) for row in rows for value in (row.product_id, row.price)])
    return events.select(
        "event_id",
        "product_id",
        "quantity",
        F.col("price").alias("paid_price"),
        names[F.col("product_id")].alias("product_name"),
        prices[F.col("product_id")].alias("list_price"),
    ).withColumn("discount", (F.col("list_price") - F.col("paid_price")) * F.col("quantity"))

"""Exercise 09.4 · Catalogue prices — a reference solution."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

# The catalogue's columns (the check writes it as a Delta table and reads it for you).
CATALOGUE_SCHEMA = "product_id STRING, product_name STRING, category STRING, price DOUBLE"


def enrich_events(events: DataFrame, products: DataFrame) -> DataFrame:
    """Every event, with its product's catalogue name, list price and discount (or nulls)."""
    # Both sides have product_name, category and price: keep only what each side contributes,
    # under names of its own, so no column is ambiguous after the join.
    paid = events.select("event_id", "product_id", "quantity", F.col("price").alias("paid_price"))
    catalogue = products.select("product_id", "product_name", F.col("price").alias("list_price"))
    # Left outer with the stream on the left: an event whose product the catalogue does not
    # know (or that has none) is kept, with null catalogue columns. Joined on product_id alone,
    # the catalogue's one row per id gives each event one row. The static side is planned again
    # in every micro-batch, so each batch sees the Delta table's latest version.
    return (
        paid.join(catalogue, on="product_id", how="left_outer")
        # null when the product is unknown: null minus anything is null
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

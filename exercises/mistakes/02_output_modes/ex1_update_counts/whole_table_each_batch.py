"""A known mistake: complete mode's answer, the whole table every batch."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

OUTPUT_MODE = "update"  # the check runs the query in this mode


def build_category_stats(orders: DataFrame) -> DataFrame:
    """Orders and average amount per category: a running aggregation with no end."""
    return orders.groupBy("category").agg(
        F.count(F.lit(1)).alias("orders"),
        F.round(F.avg("amount"), 2).alias("avg_amount"),
    )


PREDICTION = [
    [("books", 2, 8.0), ("toys", 1, 8.0)],
    [("books", 2, 8.0), ("toys", 2, 9.0), ("games", 1, 30.0)],
    [("books", 4, 10.25), ("toys", 2, 9.0), ("games", 1, 30.0)],
]

"""A known mistake: the empty file's micro-batch is taken to send nothing in complete mode."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

OUTPUT_MODE = "complete"  # the check runs the query in this mode


def build_category_stats(orders: DataFrame) -> DataFrame:
    """Orders and average amount per category: a running aggregation with no end."""
    return orders.groupBy("category").agg(
        F.count(F.lit(1)).alias("orders"),
        F.round(F.avg("amount"), 2).alias("avg_amount"),
    )


PREDICTION = [
    [("books", 1, 10.0), ("games", 1, 30.0)],
    [("books", 2, 15.0), ("games", 1, 30.0)],
    [],
    [("books", 2, 15.0), ("games", 1, 30.0), ("music", 1, 6.0)],
]

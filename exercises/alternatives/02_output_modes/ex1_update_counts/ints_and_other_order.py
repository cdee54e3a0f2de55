"""Another right answer: the correct rows (each batch's changed categories, running totals),
written with whole numbers for averages that are whole (8 == 8.0) and in another row order
within each batch, which the task says is free ('in any order')."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

OUTPUT_MODE = "update"  # the check runs the query in this mode


def build_category_stats(orders: DataFrame) -> DataFrame:
    """Orders and average amount per category: a running aggregation with no end."""
    return orders.groupBy("category").agg(
        F.count(F.lit(1)).alias("orders"),
        F.round(F.avg("amount"), 2).alias("avg_amount"),
    )


# One list per micro-batch, each holding the rows that batch sends, as tuples
# (category, orders, avg_amount), in any order; a batch that sends nothing is an empty list.
# For example: [[("films", 1, 7.5)], [("films", 2, 6.25), ("maps", 1, 3.0)], ...]
PREDICTION = [
    [("toys", 1, 8), ("books", 2, 8)],
    [("games", 1, 30), ("toys", 2, 9)],
    [("books", 4, 10.25)],
]

"""Another right answer: the whole table after each of the four batches (the empty file's batch re-
sends it unchanged), with whole-number averages written as ints (15 == 15.0) and rows in another
order, which the task allows."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

OUTPUT_MODE = "complete"  # the check runs the query in this mode


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
    [("games", 1, 30), ("books", 1, 10)],
    [("games", 1, 30), ("books", 2, 15)],
    [("games", 1, 30), ("books", 2, 15)],
    [("music", 1, 6), ("games", 1, 30), ("books", 2, 15)],
]

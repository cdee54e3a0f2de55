"""Exercise 02.1 · What update mode sends (predict) — practises lesson 02, output modes.

The query below is lesson 02's build_category_stats: orders and the average amount per
category, a running aggregation with no end. It runs in UPDATE mode on these payments, one
line per micro-batch (category amount):

  batch 0:  books 12.0, toys 8.0, books 4.0
  batch 1:  toys 10.0, games 30.0
  batch 2:  books 20.0, books 5.0

Predict the rows the sink receives in each micro-batch: (category, orders, avg_amount).
Do not run it: reason it out, then check.

Input: payments with common.schemas.TRANSACTION_SCHEMA (only category and amount matter).

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 02.1
Stuck?     python course.py exercises hint 02.1
"""

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
PREDICTION = ...  # TODO: your prediction

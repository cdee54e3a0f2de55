"""Exercise 02.2 · What complete mode sends (predict) — practises lesson 02, output modes.

The same query as exercise 02.1 (lesson 02's build_category_stats), now in COMPLETE mode, on
these payments, one line per micro-batch (category amount):

  batch 0:  books 10.0, games 30.0
  batch 1:  books 20.0
  batch 2:  (an empty file: a micro-batch with no new payment)
  batch 3:  music 6.0

Predict the rows the sink receives in each micro-batch: (category, orders, avg_amount).
Compare with what update mode would send: which batches differ, and why?

Input: payments with common.schemas.TRANSACTION_SCHEMA (only category and amount matter).

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 02.2
Stuck?     python course.py exercises hint 02.2
"""

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
PREDICTION = ...  # TODO: your prediction

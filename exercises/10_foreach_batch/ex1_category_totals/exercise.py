"""Exercise 10.1 · Totals a replay cannot double (build) — practises lesson 10, idempotent writes.

Lesson 10 adds each micro-batch's sales per category to running totals in a database, and
records the batch id in the same transaction, so a batch that Spark runs again adds nothing.
Do the same into a Delta table: write ``write_category_totals``, the foreachBatch function that
keeps, in the Delta table at ``table``, ONE row per category with its totals over every batch
so far. ``build_category_sales(batch)`` (lesson 10's) gives one batch's sales per category.

Spark runs a batch again, with the same id and the same rows, when it crashed after your write
but before it recorded the batch as done. The check runs your function for each micro-batch,
runs batch 1 a second time (such a retry), and reads the table after each batch: the retry
must change nothing. It runs the retry as a restarted process would: from a fresh import of
your file, with the rows in another order. It also stops batch 2 inside your function, right
after one of its writes (a table write or MERGE, a file), then runs batch 2 again.

Expected columns of the table, in this order:
  category    the product category
  purchases   purchases in the category so far (a count)
  units       units bought so far (the sum of quantity)
  revenue     money so far (the sum of price x quantity, rounded to 2 places)
  last_batch  the id of the last batch that added to the category

Input: micro-batches of shop events with common.schemas.ECOMMERCE_EVENT_SCHEMA (event_id,
user_id, event_type, product_id, product_name, category, price, quantity, timestamp).

The check takes about 15 seconds (measured on 2 cores).

Check it:  python course.py exercises check 10.1
Stuck?     python course.py exercises hint 10.1
"""

from pathlib import Path

from delta.tables import DeltaTable  # noqa: F401  (you may need it)
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

from common import paths  # noqa: F401  (paths.uri(table): the address Spark gets for a path)
from common.batch_ids import query_id  # noqa: F401  (the query's id, the same after a restart)
from common.sales import build_category_sales  # noqa: F401  (one batch's sales per category)


def write_category_totals(batch: DataFrame, batch_id: int, table: Path) -> None:
    """Add the batch's sales per category to the totals in the Delta table ``table``, once per
    ``batch_id``: running the same batch id again must change nothing."""
    raise NotImplementedError("TODO: add the batch's sales to the totals, once per batch id")

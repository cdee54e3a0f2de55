"""Exercise 11.1 · The latest event per user (build) — practises lesson 11, MERGE from foreachBatch.

Write ``write_latest_per_user``, the foreachBatch function that keeps, in the Delta table at
``table``, ONE row per user: their latest event by event time (``timestamp``); of two events
of a user at the same time, the one with the greater event_id counts. A micro-batch
updates the users it holds and adds the new ones; the other users' rows stay as they are.

Two things make it harder than it looks:
  - one micro-batch may hold several events of the same user: only the latest counts;
  - an event can arrive late, in a batch after a newer event of the same user: it must not
    replace the newer row.

The check runs your function in a real query, one call per micro-batch, and reads the table
after each batch.

Expected columns of the table, in this order:
  user_id          the user
  last_event_id    the event_id of their latest event
  last_event_type  its event_type (view, cart or purchase)
  last_product_id  its product_id
  last_seen        its timestamp

Input: micro-batches of shop events with common.schemas.ECOMMERCE_EVENT_SCHEMA (event_id,
user_id, event_type, product_id, product_name, category, price, quantity, timestamp).

The check takes about 20 seconds (measured on 2 cores).

Check it:  python course.py exercises check 11.1
Stuck?     python course.py exercises hint 11.1
"""

from pathlib import Path

from delta.tables import DeltaTable  # noqa: F401  (you will need it)
from pyspark.sql import DataFrame, Window  # noqa: F401  (Window: you may need it)
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

from common import paths  # noqa: F401  (paths.uri(table): the address Spark gets for a path)


def write_latest_per_user(batch: DataFrame, table: Path) -> None:
    """Upsert one row per user, their latest event, into the Delta table ``table`` (creating
    the table if needed)."""
    raise NotImplementedError("TODO: MERGE the batch's latest event per user into the table")

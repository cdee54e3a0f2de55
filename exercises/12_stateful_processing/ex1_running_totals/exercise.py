"""Exercise 12.1 · Running totals that close (build) — practises lesson 12, applyInPandasWithState.

Keep a running total per user: how many events they sent, and how much they spent (price *
quantity of their purchases). Write the function Spark calls once per user per micro-batch,
with the user's new rows (or none at all, when the call is a timeout) and the user's
GroupState. It yields one row per call:
  - "active" after new events: the user's totals so far;
  - "closed" once the user has had no event for 30 seconds of event time (IDLE_TIMEOUT_MS),
    that is once the watermark passes their latest event + 30 s: their final totals. Then the
    user is forgotten: a later event of theirs would start again from zero.
Mind lesson 12's rule for the timeouts you set.

The check calls your function the way lesson 12 does, with the settings of this file:

    events.withWatermark("timestamp", WATERMARK_DELAY)
    .groupBy("user_id")
    .applyInPandasWithState(
        update_user_totals, OUTPUT_SCHEMA, STATE_SCHEMA, "update",
        GroupStateTimeout.EventTimeTimeout,
    )

Expected columns (OUTPUT_SCHEMA; to_summary below builds such a row), in this order:
  user_id       the user
  status        "active" or "closed"
  events        the user's events so far
  total_spent   price * quantity summed over the user's purchases, rounded to 2 places
  last_seen     the user's latest event time

Input: a stream of shop events with common.schemas.ECOMMERCE_EVENT_SCHEMA; your function gets
them as pandas DataFrames with those columns.

The check also compares how many users are left in state after the last batch.

The check takes about 10 seconds (measured on 2 cores).

Check it:  python course.py exercises check 12.1
Stuck?     python course.py exercises hint 12.1
"""

from typing import Iterator

import pandas as pd
from pyspark.sql.streaming.state import GroupState

WATERMARK_DELAY = "10 seconds"  # how late an event may be and still count
IDLE_TIMEOUT_MS = 30_000  # a user with no event for this long (event time) is closed
OUTPUT_SCHEMA = (
    "user_id STRING, status STRING, events LONG, total_spent DOUBLE, last_seen TIMESTAMP"
)
# What Spark keeps per user between batches; last_seen_ms in epoch milliseconds.
STATE_SCHEMA = "events LONG, total_spent DOUBLE, last_seen_ms LONG"


def update_user_totals(
    key: tuple, batches: Iterator[pd.DataFrame], state: GroupState
) -> Iterator[pd.DataFrame]:
    """One "active" row per user per batch with events; one "closed" row on the timeout."""
    raise NotImplementedError("TODO: write the function")


def to_summary(
    user_id: str, status: str, events: int, spent: float, last_seen_ms: int
) -> pd.DataFrame:
    """One output row in OUTPUT_SCHEMA's column order."""
    return pd.DataFrame(
        {
            "user_id": [user_id],
            "status": [status],
            "events": [events],
            "total_spent": [spent],
            "last_seen": [pd.Timestamp(last_seen_ms, unit="ms")],
        }
    )

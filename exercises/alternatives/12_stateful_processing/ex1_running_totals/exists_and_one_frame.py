"""Another right answer: state.exists and state.get instead of getOption, the batch's frames
concatenated into one, the purchases picked with a mask."""

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
    (user_id,) = key
    if state.hasTimedOut:
        # Called with no rows: the watermark passed the timeout set below. Say goodbye and
        # forget the user, or the state store keeps every user ever seen.
        kept = state.get
        state.remove()
        yield to_summary(user_id, "closed", *kept)
        return
    if state.exists:
        events, spent, last_seen_ms = state.get
    else:
        events, spent, last_seen_ms = 0, 0.0, 0
    rows = pd.concat(list(batches), ignore_index=True)
    is_purchase = rows["event_type"].eq("purchase")
    events += int(rows.shape[0])
    spent = round(spent + float((rows["price"] * rows["quantity"])[is_purchase].sum()), 2)
    newest = int(rows["timestamp"].max().value // 1_000_000)
    last_seen_ms = newest if newest > last_seen_ms else last_seen_ms
    state.update((events, spent, last_seen_ms))
    # Call me again once the watermark passes last_seen + the idle time, but never earlier than
    # the current watermark: Spark refuses that (INVALID_TIMEOUT_TIMESTAMP). Late rows are
    # filtered with the previous batch's watermark, so a user's newest event can be behind it.
    state.setTimeoutTimestamp(
        max(last_seen_ms + IDLE_TIMEOUT_MS, state.getCurrentWatermarkMs() + 1)
    )
    yield to_summary(user_id, "active", events, spent, last_seen_ms)


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

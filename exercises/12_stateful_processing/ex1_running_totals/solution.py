"""Exercise 12.1 · Running totals that close — a reference solution."""

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
    # getOption: the tuple in STATE_SCHEMA's order, or None for a user seen the first time.
    events, spent, last_seen_ms = state.getOption or (0, 0.0, 0)
    for rows in batches:
        bought = rows[rows["event_type"] == "purchase"]
        events = events + len(rows)
        spent = round(spent + float((bought["price"] * bought["quantity"]).sum()), 2)
        # Naive pandas times in the session time zone (UTC): .value is ns since the epoch.
        last_seen_ms = max(last_seen_ms, rows["timestamp"].max().value // 1_000_000)
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

"""Exercise 15.2 · A dedup that forgets (fix) — practises lesson 15, dropDuplicatesWithinWatermark.

The shop's producer retries: when an event is not acknowledged in time, it sends it again with
the same event_id, sometimes with the retry's time as its timestamp. A retry never comes more
than 30 seconds (DEDUP_DELAY) of event time after the first copy.

The query below lets each event through once, but its state grows for ever: the state store
keeps every event_id the stream has ever seen, so after a day each micro-batch reads and writes
a state of millions of ids (stateOperators[].numRowsTotal in the query's progress only grows).
Fix it so that it still lets each event through once (the first copy that arrives, whatever
the retries' timestamps), and forgets an event_id once no retry of it can still come: once the
watermark (the latest event time seen minus DEDUP_DELAY) has passed that copy's time +
DEDUP_DELAY.

The check compares, batch by batch, the rows let through, the watermark each batch ran with and
the rows it dropped as too late, and the state rows (event ids kept) left after the last batch.

Expected columns, in this order: the input's, unchanged (event_id, user_id, event_type,
product_id, product_name, category, price, quantity, timestamp), one row per event_id.

Input: a stream of shop events with common.schemas.ECOMMERCE_EVENT_SCHEMA.

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 15.2
Stuck?     python course.py exercises hint 15.2
"""

from pyspark.sql import DataFrame

DEDUP_DELAY = "30 seconds"  # a retry comes at most this long (event time) after the first copy


def build_unique_events(events: DataFrame) -> DataFrame:
    """Each event once, whatever the retries' timestamps."""
    # Spark keeps each event_id in state, to recognise a retry.
    return events.dropDuplicates(["event_id"])

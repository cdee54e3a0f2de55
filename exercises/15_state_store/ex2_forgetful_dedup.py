"""Exercise 15.2 · Each event once (build) — practises lesson 15, dropDuplicatesWithinWatermark.

The shop's producer retries: when an event is not acknowledged in time, it sends it again with
the same event_id, and sometimes with a timestamp a few seconds later (the time of the retry).
Write the query that lets each event through once, the first copy that arrives, and that
forgets an event_id once no copy of it can still come: once the watermark (the latest event
time seen minus 30 seconds, DEDUP_DELAY) has passed that copy's time + 30 seconds. A copy
that comes later than that is late anyway.

Expected columns, in this order: the input's, unchanged (event_id, user_id, event_type,
product_id, product_name, category, price, quantity, timestamp), one row per event_id.

Input: a stream of shop events with common.schemas.ECOMMERCE_EVENT_SCHEMA.

The check also compares how many state rows (event ids kept) are left after the last batch.

Check it:  python course.py exercises check 15.2
Stuck?     python course.py exercises hint 15.2
"""

from pyspark.sql import DataFrame

DEDUP_DELAY = "30 seconds"  # how long after its event time a copy of an event may still come


def build_dedup_within_watermark(events: DataFrame) -> DataFrame:
    """Each event_id once; an id is forgotten once the watermark passes its time + 30 s."""
    raise NotImplementedError("TODO: write the query")

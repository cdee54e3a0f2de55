"""Exercise 15.2 · Each event once — a reference solution."""

from pyspark.sql import DataFrame

DEDUP_DELAY = "30 seconds"  # how long after its event time a copy of an event may still come


def build_dedup_within_watermark(events: DataFrame) -> DataFrame:
    """Each event_id once; an id is forgotten once the watermark passes its time + 30 s."""
    # The watermark tells the deduplication when an id can be forgotten. The key is event_id
    # alone: a retry with a later timestamp is the same event. WithinWatermark keeps each id
    # until the watermark passes the kept copy's time + DEDUP_DELAY, then drops it from state.
    return events.withWatermark("timestamp", DEDUP_DELAY).dropDuplicatesWithinWatermark(
        ["event_id"]
    )

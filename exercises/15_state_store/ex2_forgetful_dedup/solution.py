"""Exercise 15.2 · A dedup that forgets — a reference solution."""

from pyspark.sql import DataFrame

DEDUP_DELAY = "30 seconds"  # a retry comes at most this long (event time) after the first copy


def build_unique_events(events: DataFrame) -> DataFrame:
    """Each event once, whatever the retries' timestamps."""
    # dropDuplicates(["event_id"]) can never forget an id: its key holds no event time, so no
    # watermark can tell it that an id is done. With the watermark, the deduplication keeps an
    # id until the watermark passes its time + DEDUP_DELAY; the key stays the id alone, so a
    # retry with a later timestamp is still caught.
    return events.withWatermark("timestamp", DEDUP_DELAY).dropDuplicatesWithinWatermark(
        ["event_id"]
    )

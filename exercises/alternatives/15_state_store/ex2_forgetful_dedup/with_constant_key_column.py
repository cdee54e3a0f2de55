"""Another right answer: the key is (event_id, user_id) instead of event_id alone: every copy of an
event, the first and its retries, is the same event of the same user, so user_id adds nothing to
the key and lets no retry through. The watermark is DEDUP_DELAY on the event time and the
deduplication is within it, so an id is forgotten once the watermark passes its time + 30 s. The
output columns are selected explicitly, in the input's order."""

from pyspark.sql import DataFrame

DEDUP_DELAY = "30 seconds"  # a retry comes at most this long (event time) after the first copy


def build_unique_events(events: DataFrame) -> DataFrame:
    """Each event once, whatever the retries' timestamps."""
    columns = events.columns
    watermarked = events.withWatermark(eventTime="timestamp", delayThreshold=DEDUP_DELAY)
    return watermarked.dropDuplicatesWithinWatermark(subset=["event_id", "user_id"]).select(
        *columns
    )

"""Another right answer: the key is (event_id, user_id) instead of event_id alone: every copy of an
event, the first and its retries, is the same event of the same user, so user_id adds nothing to
the key and lets no retry through. The watermark is DEDUP_DELAY on the event time and the
deduplication is within it, so an id is forgotten once the watermark passes its time + 30 s. The
output columns are selected explicitly, in the input's order."""

from pyspark.sql import DataFrame

DEDUP_DELAY = "30 seconds"  # how long after its event time a copy of an event may still come


def build_dedup_within_watermark(events: DataFrame) -> DataFrame:
    """Each event_id once; an id is forgotten once the watermark passes its time + 30 s."""
    columns = events.columns
    watermarked = events.withWatermark(eventTime="timestamp", delayThreshold=DEDUP_DELAY)
    return watermarked.dropDuplicatesWithinWatermark(subset=["event_id", "user_id"]).select(
        *columns
    )

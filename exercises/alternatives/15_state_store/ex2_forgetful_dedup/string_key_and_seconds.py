"""Another right answer: the key given as a list by keyword, the delay written as 30000
milliseconds."""

from pyspark.sql import DataFrame

DEDUP_DELAY = "30 seconds"  # how long after its event time a copy of an event may still come


def build_dedup_within_watermark(events: DataFrame) -> DataFrame:
    """Each event_id once; an id is forgotten once the watermark passes its time + 30 s."""
    watermarked = events.withWatermark(eventTime="timestamp", delayThreshold="30000 milliseconds")
    return watermarked.dropDuplicatesWithinWatermark(subset=["event_id"])

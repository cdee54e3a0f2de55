"""A known mistake: withWatermark called, but its result (a new DataFrame) thrown away, so the
deduplication runs without a watermark and keeps every event_id for ever."""

from pyspark.sql import DataFrame

DEDUP_DELAY = "30 seconds"


def build_unique_events(events: DataFrame) -> DataFrame:
    events.withWatermark("timestamp", DEDUP_DELAY)
    return events.dropDuplicates(["event_id"])

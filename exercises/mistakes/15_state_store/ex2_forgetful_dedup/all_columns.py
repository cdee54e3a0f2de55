"""A known mistake: deduplicating on every column, so a retry with a later timestamp passes."""

from pyspark.sql import DataFrame

DEDUP_DELAY = "30 seconds"


def build_unique_events(events: DataFrame) -> DataFrame:
    return events.withWatermark("timestamp", DEDUP_DELAY).dropDuplicatesWithinWatermark()

"""A known mistake: a watermark added, but dropDuplicates on event_id never forgets an id."""

from pyspark.sql import DataFrame

DEDUP_DELAY = "30 seconds"


def build_unique_events(events: DataFrame) -> DataFrame:
    return events.withWatermark("timestamp", DEDUP_DELAY).dropDuplicates(["event_id"])

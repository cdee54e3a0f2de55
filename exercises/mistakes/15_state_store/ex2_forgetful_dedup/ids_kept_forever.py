"""A known mistake: a watermark, then dropDuplicates on event_id, which never forgets an id."""

from pyspark.sql import DataFrame

DEDUP_DELAY = "30 seconds"


def build_dedup_within_watermark(events: DataFrame) -> DataFrame:
    return events.withWatermark("timestamp", DEDUP_DELAY).dropDuplicates(["event_id"])

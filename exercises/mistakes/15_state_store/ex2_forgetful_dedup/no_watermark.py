"""A known mistake: dropDuplicates with no watermark, so every event_id is kept for ever."""

from pyspark.sql import DataFrame


def build_dedup_within_watermark(events: DataFrame) -> DataFrame:
    return events.dropDuplicates(["event_id"])

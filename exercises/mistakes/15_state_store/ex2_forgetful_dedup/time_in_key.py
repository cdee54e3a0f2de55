"""A known mistake: the timestamp in the key, so a retry (a later timestamp) gets through."""

from pyspark.sql import DataFrame

DEDUP_DELAY = "30 seconds"


def build_unique_events(events: DataFrame) -> DataFrame:
    # The state is bounded (the watermark evicts old (id, timestamp) keys), but a retry's
    # (id, later timestamp) is a new key.
    return events.withWatermark("timestamp", DEDUP_DELAY).dropDuplicates(["event_id", "timestamp"])

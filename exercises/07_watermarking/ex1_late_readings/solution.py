"""Exercise 07.1 · Late readings left out — a reference solution."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

WINDOW_SIZE = "10 seconds"  # tumbling windows of event time
WATERMARK_DELAY = "5 seconds"  # a reading up to this far behind the latest event time counts


def build_sensor_counts(readings: DataFrame) -> DataFrame:
    """Readings per sensor per 10 s window, each window sent once, when it is final."""
    # The watermark is set on the event-time column BEFORE the aggregation: the groupBy then
    # knows when a window is final (append sends it once and forgets it) and drops a reading
    # that comes for a window the watermark has already passed.
    grouped = readings.withWatermark("event_time", WATERMARK_DELAY).groupBy(
        F.window("event_time", WINDOW_SIZE), "sensor_id"
    )
    return grouped.agg(F.count("*").alias("readings")).select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "sensor_id",
        "readings",
    )

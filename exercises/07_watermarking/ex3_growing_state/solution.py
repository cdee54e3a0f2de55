"""Exercise 07.3 · State that grows forever — a reference solution."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

WINDOW_SIZE = "10 seconds"  # tumbling windows of event time
MAX_LATENESS = "10 seconds"  # no reading comes more than 10 s behind the latest event time


def build_sensor_windows(readings: DataFrame) -> DataFrame:
    """Readings and average temperature per sensor per 10 s window (the query runs in update
    mode)."""
    # Without a watermark any window may still get a reading, so Spark keeps them all. The
    # watermark (latest event time - MAX_LATENESS) on the column the windows are computed
    # from lets it remove a window from the state once the watermark has reached its end.
    # No reading is later than that, so the rows sent do not change.
    on_time = readings.withWatermark("event_time", MAX_LATENESS)
    grouped = on_time.groupBy(F.window("event_time", WINDOW_SIZE), "sensor_id")
    return grouped.agg(
        F.count("*").alias("readings"),
        F.round(F.avg("temperature"), 2).alias("avg_temp"),
    ).select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "sensor_id",
        "readings",
        "avg_temp",
    )

"""Exercise 06.2 · Sliding averages per sensor — a reference solution."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SLIDING_SIZE = "20 seconds"  # 20 s windows ...
SLIDING_STEP = "10 seconds"  # ... a new one every 10 s


def build_sliding_averages(readings: DataFrame) -> DataFrame:
    """Readings and average temperature per sensor per sliding window of event time."""
    # A third argument to window(), the slide, makes the windows overlap: each reading lands
    # in SLIDING_SIZE / SLIDING_STEP = 2 of them. The window is computed from event_time, the
    # time written in the reading, so a reading that arrives late still lands in its own.
    grouped = readings.groupBy(F.window("event_time", SLIDING_SIZE, SLIDING_STEP), "sensor_id")
    return grouped.agg(
        F.count("*").alias("readings"),
        F.round(F.avg("temperature"), 2).alias("avg_temp"),
    ).select(
        # window is a struct: its start and end become two columns.
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "sensor_id",
        "readings",
        "avg_temp",
    )

"""Another right answer: the window computed as a column first (withColumn), then grouped by
name; the watermark still on event_time, before the aggregation."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

WINDOW_SIZE = "10 seconds"  # tumbling windows of event time
WATERMARK_DELAY = "5 seconds"  # a reading up to this far behind the latest event time counts


def build_sensor_counts(readings: DataFrame) -> DataFrame:
    """Readings per sensor per 10 s window, each window sent once, when it is final."""
    windowed = readings.withWatermark("event_time", WATERMARK_DELAY).withColumn(
        "window", F.window("event_time", WINDOW_SIZE)
    )
    counts = windowed.groupBy("window", "sensor_id").agg(F.count("reading_id").alias("readings"))
    return counts.select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "sensor_id",
        "readings",
    )

"""A known mistake: a watermark of an hour, where readings are at most 10 seconds late."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def build_sensor_windows(readings: DataFrame) -> DataFrame:
    on_time = readings.withWatermark("event_time", "1 hour")
    grouped = on_time.groupBy(F.window("event_time", "10 seconds"), "sensor_id")
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

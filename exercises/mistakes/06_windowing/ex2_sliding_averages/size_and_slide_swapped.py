"""A known mistake: the slide before the size, window(event_time, "10 seconds", "20 seconds")."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def build_sliding_averages(readings: DataFrame) -> DataFrame:
    grouped = readings.groupBy(F.window("event_time", "10 seconds", "20 seconds"), "sensor_id")
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

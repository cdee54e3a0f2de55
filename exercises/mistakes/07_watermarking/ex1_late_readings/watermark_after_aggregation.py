"""A known mistake: the watermark set on the aggregation's result, after the groupBy."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def build_sensor_counts(readings: DataFrame) -> DataFrame:
    grouped = readings.groupBy(F.window("event_time", "10 seconds"), "sensor_id")
    counts = grouped.agg(F.count("*").alias("readings")).select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "sensor_id",
        "readings",
    )
    return counts.withWatermark("window_end", "5 seconds")

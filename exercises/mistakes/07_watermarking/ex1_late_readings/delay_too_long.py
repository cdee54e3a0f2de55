"""A known mistake: a 10-second delay where readings may be at most 5 seconds late."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def build_sensor_counts(readings: DataFrame) -> DataFrame:
    grouped = readings.withWatermark("event_time", "10 seconds").groupBy(
        F.window("event_time", "10 seconds"), "sensor_id"
    )
    return grouped.agg(F.count("*").alias("readings")).select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "sensor_id",
        "readings",
    )

"""A known mistake: the watermark on the time a reading arrived, not on the windows' event time."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def build_sensor_windows(readings: DataFrame) -> DataFrame:
    arrived = readings.withColumn("arrival_time", F.current_timestamp())
    on_time = arrived.withWatermark("arrival_time", "10 seconds")
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

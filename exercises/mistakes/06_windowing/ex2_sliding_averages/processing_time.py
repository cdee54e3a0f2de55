"""A known mistake: windows of processing time (when Spark ran the batch), not event time."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def build_sliding_averages(readings: DataFrame) -> DataFrame:
    arrived = readings.withColumn("arrival_time", F.current_timestamp())
    grouped = arrived.groupBy(F.window("arrival_time", "20 seconds", "10 seconds"), "sensor_id")
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

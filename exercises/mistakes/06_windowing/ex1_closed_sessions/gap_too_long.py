"""A known mistake: a 10-second gap (the watermark's delay) instead of the 5-second one."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def build_closed_sessions(readings: DataFrame) -> DataFrame:
    sessions = (
        readings.withWatermark("event_time", "10 seconds")
        .groupBy(F.session_window("event_time", "10 seconds"), "sensor_id")
        .agg(F.count("*").alias("readings"))
    )
    return sessions.select(
        F.col("session_window.start").alias("session_start"),
        F.col("session_window.end").alias("session_end"),
        "sensor_id",
        "readings",
    )

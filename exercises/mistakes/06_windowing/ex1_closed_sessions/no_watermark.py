"""A known mistake: no watermark, so append mode never knows that a session is final."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SESSION_GAP = "5 seconds"


def build_closed_sessions(readings: DataFrame) -> DataFrame:
    sessions = readings.groupBy(F.session_window("event_time", SESSION_GAP), "sensor_id").agg(
        F.count("*").alias("readings")
    )
    return sessions.select(
        F.col("session_window.start").alias("session_start"),
        F.col("session_window.end").alias("session_end"),
        "sensor_id",
        "readings",
    )

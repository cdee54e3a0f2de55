"""Exercise 06.1 · Sessions that close — a reference solution."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SESSION_GAP = "5 seconds"
WATERMARK_DELAY = "10 seconds"


def build_closed_sessions(readings: DataFrame) -> DataFrame:
    """Each sensor's sessions, each sent once, when the watermark has reached its end."""
    # The watermark comes before the aggregation: it tells the groupBy how long to wait.
    sessions = (
        readings.withWatermark("event_time", WATERMARK_DELAY)
        .groupBy(F.session_window("event_time", SESSION_GAP), "sensor_id")
        .agg(F.count("*").alias("readings"))
    )
    return sessions.select(
        F.col("session_window.start").alias("session_start"),
        F.col("session_window.end").alias("session_end"),
        "sensor_id",
        "readings",
    )

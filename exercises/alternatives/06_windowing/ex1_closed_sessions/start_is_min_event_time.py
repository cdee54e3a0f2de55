"""Another right answer: a session window starts at its earliest reading, so min(event_time) equals
session_window.start (whatever the arrival order); the end is taken from the window (last
reading + gap), and count(lit(1)) counts every reading."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

SESSION_GAP = "5 seconds"
WATERMARK_DELAY = "10 seconds"


def build_closed_sessions(readings: DataFrame) -> DataFrame:
    """Each sensor's sessions, each sent once, when the watermark has reached its end."""
    grouped = readings.withWatermark("event_time", WATERMARK_DELAY).groupBy(
        F.session_window("event_time", SESSION_GAP), "sensor_id"
    )
    return grouped.agg(
        F.min("event_time").alias("earliest"), F.count(F.lit(1)).alias("readings")
    ).select(
        F.col("earliest").alias("session_start"),
        F.col("session_window.end").alias("session_end"),
        "sensor_id",
        "readings",
    )

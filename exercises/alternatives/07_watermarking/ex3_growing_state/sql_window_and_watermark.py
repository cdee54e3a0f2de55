"""Another right answer: the watermark's delay written in milliseconds, the window and the
aggregates as SQL expressions."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

WINDOW_SIZE = "10 seconds"  # tumbling windows of event time
MAX_LATENESS = "10 seconds"  # no reading comes more than 10 s behind the latest event time


def build_sensor_windows(readings: DataFrame) -> DataFrame:
    """Readings and average temperature per sensor per 10 s window (the query runs in update
    mode)."""
    on_time = readings.withWatermark("event_time", "10000 milliseconds")
    grouped = on_time.groupBy(F.expr(f"window(event_time, '{WINDOW_SIZE}') AS window"), "sensor_id")
    return grouped.agg(
        F.expr("count(*) AS readings"), F.expr("round(avg(temperature), 2) AS avg_temp")
    ).selectExpr(
        "window.start AS window_start",
        "window.end AS window_end",
        "sensor_id",
        "readings",
        "avg_temp",
    )

"""Another right answer: the watermark is set on event_time before the aggregation with the same
lateness written as "10000 milliseconds"; the aggregates and columns in SQL expressions
(count(*), round(avg(temperature), 2), selectExpr of window.start/end). Same plan."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

WINDOW_SIZE = "10 seconds"  # tumbling windows of event time
MAX_LATENESS = "10 seconds"  # no reading comes more than 10 s behind the latest event time


def build_sensor_windows(readings: DataFrame) -> DataFrame:
    """Readings and average temperature per sensor per 10 s window (the query runs in update
    mode)."""
    # MAX_LATENESS, in milliseconds: the same 10 s.
    on_time = readings.withWatermark("event_time", "10000 milliseconds")
    grouped = on_time.groupBy(F.window("event_time", WINDOW_SIZE), "sensor_id")
    return grouped.agg(
        F.expr("count(*)").alias("readings"),
        F.expr("round(avg(temperature), 2)").alias("avg_temp"),
    ).selectExpr(
        "window.start AS window_start",
        "window.end AS window_end",
        "sensor_id",
        "readings",
        "avg_temp",
    )

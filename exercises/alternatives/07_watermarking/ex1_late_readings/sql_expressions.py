"""Another right answer: the same query in SQL expressions: the watermark on event_time before the
aggregation, window(event_time, '10 seconds') and sensor_id as grouping keys, count(*), and
selectExpr for the window's start and end. Same plan as the Column API version."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

WINDOW_SIZE = "10 seconds"  # tumbling windows of event time
WATERMARK_DELAY = "5 seconds"  # a reading up to this far behind the latest event time counts


def build_sensor_counts(readings: DataFrame) -> DataFrame:
    """Readings per sensor per 10 s window, each window sent once, when it is final."""
    on_time = readings.withWatermark("event_time", WATERMARK_DELAY)
    counts = on_time.groupBy(
        F.expr(f"window(event_time, '{WINDOW_SIZE}')").alias("w"), F.col("sensor_id")
    ).agg(F.expr("count(*)").alias("readings"))
    return counts.selectExpr(
        "w.start AS window_start", "w.end AS window_end", "sensor_id", "readings"
    )

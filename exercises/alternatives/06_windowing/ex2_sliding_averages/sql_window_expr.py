"""Another right answer: window(event_time, '20 seconds', '10 seconds') written in SQL through
F.expr and aliased w, the aggregates as SQL expressions, the struct fields read with selectExpr:
the same sliding windows of event time, the same count and rounded average, in the asked order."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

SLIDING_SIZE = "20 seconds"  # 20 s windows ...
SLIDING_STEP = "10 seconds"  # ... a new one every 10 s


def build_sliding_averages(readings: DataFrame) -> DataFrame:
    """Readings and average temperature per sensor per sliding window of event time."""
    window = F.expr(f"window(event_time, '{SLIDING_SIZE}', '{SLIDING_STEP}')").alias("w")
    return (
        readings.groupBy(window, "sensor_id")
        .agg(F.expr("count(*) AS readings"), F.expr("round(avg(temperature), 2) AS avg_temp"))
        .selectExpr(
            "w.start AS window_start", "w.end AS window_end", "sensor_id", "readings", "avg_temp"
        )
    )

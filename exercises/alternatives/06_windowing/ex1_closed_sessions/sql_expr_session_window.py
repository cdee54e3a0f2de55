"""Another right answer: the same query with SQL expressions: session_window(event_time, '5
seconds') through F.expr (its column is still named session_window), count(1), and selectExpr
for the struct fields; the watermark of 10 s is set before the aggregation."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

SESSION_GAP = "5 seconds"
WATERMARK_DELAY = "10 seconds"


def build_closed_sessions(readings: DataFrame) -> DataFrame:
    """Each sensor's sessions, each sent once, when the watermark has reached its end."""
    with_watermark = readings.withWatermark("event_time", WATERMARK_DELAY)
    grouped = with_watermark.groupBy(
        "sensor_id", F.expr(f"session_window(event_time, '{SESSION_GAP}')")
    )
    return grouped.agg(F.expr("count(1) AS readings")).selectExpr(
        "session_window.start AS session_start",
        "session_window.end AS session_end",
        "sensor_id",
        "readings",
    )

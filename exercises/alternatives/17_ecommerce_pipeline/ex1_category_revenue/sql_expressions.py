"""Another right answer: the same query in SQL expressions: the watermark on timestamp before the
groupBy, the purchase filter as a SQL string, window() via F.expr, aggregates written as
round(sum(price * quantity), 2) etc., and selectExpr for the window's start and end."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

REVENUE_WINDOW = "5 minutes"
# An event up to this far behind the latest counts; a later one only while its window is open.
WATERMARK_DELAY = "10 minutes"
EVENT_TIME = "timestamp"  # the event-time column of ECOMMERCE_EVENT_SCHEMA


def build_category_revenue(events: DataFrame) -> DataFrame:
    """Purchases, revenue and average price per category per 5-minute window of event time."""
    purchases = events.withWatermark(EVENT_TIME, WATERMARK_DELAY).where("event_type = 'purchase'")
    grouped = purchases.groupBy(
        F.expr(f"window(`{EVENT_TIME}`, '{REVENUE_WINDOW}')").alias("w"), "category"
    ).agg(
        F.expr("count(1)").alias("purchases"),
        F.expr("round(sum(price * quantity), 2)").alias("revenue"),
        F.expr("round(avg(price), 2)").alias("avg_price"),
    )
    return grouped.selectExpr(
        "w.start AS window_start",
        "w.end AS window_end",
        "category",
        "purchases",
        "revenue",
        "avg_price",
    )

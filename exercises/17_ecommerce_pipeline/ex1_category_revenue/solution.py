"""Exercise 17.1 · Revenue per category — a reference solution (lesson 17's
build_category_revenue)."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

REVENUE_WINDOW = "5 minutes"
# An event up to this far behind the latest counts; a later one only while its window is open.
WATERMARK_DELAY = "10 minutes"
EVENT_TIME = "timestamp"  # the event-time column of ECOMMERCE_EVENT_SCHEMA


def build_category_revenue(events: DataFrame) -> DataFrame:
    """Purchases, revenue and average price per category per 5-minute window of event time."""
    purchases = (
        # The watermark comes before the aggregation: it drops purchases too late for their
        # window and lets Spark forget windows it has passed (the state stays small).
        events.withWatermark(EVENT_TIME, WATERMARK_DELAY)
        # Revenue comes from purchases only; views and carts add up to nothing here.
        .where(F.col("event_type") == "purchase")
    )
    return (
        purchases.groupBy(F.window(EVENT_TIME, REVENUE_WINDOW).alias("window"), "category")
        .agg(
            F.count("*").alias("purchases"),
            # Rounded so the totals read like money (doubles add up to 0.30000000000000004).
            F.round(F.sum(F.col("price") * F.col("quantity")), 2).alias("revenue"),
            F.round(F.avg("price"), 2).alias("avg_price"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "category",
            "purchases",
            "revenue",
            "avg_price",
        )
    )

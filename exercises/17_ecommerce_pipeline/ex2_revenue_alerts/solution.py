"""Exercise 17.2 · Alerts from the revenue table — a reference solution."""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from common import paths

REVENUE_WINDOW = "5 minutes"
# An event up to this far behind the latest counts; a later one only while its window is open.
WATERMARK_DELAY = "10 minutes"
EVENT_TIME = "timestamp"  # the event-time column of ECOMMERCE_EVENT_SCHEMA
REVENUE_TARGET = 500.0  # an alert for a window whose revenue reached this much or more


def run_pipeline(
    events: DataFrame, revenue_table: Path, alerts_table: Path, checkpoints: Path
) -> list[StreamingQuery]:
    """One scheduled run: the closed revenue windows into revenue_table, then the alerts read
    from revenue_table into alerts_table. Each query reads what there is, then stops."""
    # The revenue query first: append mode writes each window once, when the watermark has
    # closed it; Delta records each micro-batch's commit with the query's id and batch id.
    revenue = (
        build_category_revenue(events)
        .writeStream.format("delta")
        .outputMode("append")
        .option("checkpointLocation", paths.uri(checkpoints / "revenue"))
        # availableNow: read every file there is, in micro-batches, then stop.
        .trigger(availableNow=True)
        .start(paths.uri(revenue_table))
    )
    # The alerts read the revenue table's commits: they can only start once it exists, and an
    # availableNow query reads the versions there when it starts. So the revenue run ends first.
    revenue.awaitTermination()
    alerts = (
        build_revenue_alerts(read_revenue(events.sparkSession, revenue_table))
        .writeStream.format("delta")
        .outputMode("append")
        # A checkpoint of its own: it remembers the last version of revenue_table it read.
        .option("checkpointLocation", paths.uri(checkpoints / "alerts"))
        .trigger(availableNow=True)
        .start(paths.uri(alerts_table))
    )
    alerts.awaitTermination()
    return [revenue, alerts]


def read_revenue(spark, revenue_table: Path) -> DataFrame:
    """The revenue table as a stream: each new commit (each closed window) is new input."""
    return spark.readStream.format("delta").load(paths.uri(revenue_table))


def build_revenue_alerts(revenue: DataFrame) -> DataFrame:
    """The windows whose revenue reached REVENUE_TARGET: the target itself counts."""
    return revenue.where(F.col("revenue") >= REVENUE_TARGET)


def build_category_revenue(events: DataFrame) -> DataFrame:
    """Purchases and revenue per category per 5-minute window of event time (lesson 17's)."""
    purchases = (
        events.withWatermark(EVENT_TIME, WATERMARK_DELAY)
        # Revenue comes from purchases only; views and carts add up to nothing here.
        .where(F.col("event_type") == "purchase")
    )
    return (
        purchases.groupBy(F.window(EVENT_TIME, REVENUE_WINDOW).alias("window"), "category")
        .agg(
            F.count("*").alias("purchases"),
            F.round(F.sum(F.col("price") * F.col("quantity")), 2).alias("revenue"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "category",
            "purchases",
            "revenue",
        )
    )

"""17 · The e-commerce capstone: one stream of shop events, several queries, a live dashboard.

What you'll learn
  - Revenue per category in 5-minute windows (update mode) and the view -> cart -> purchase funnel
    in 2-minute windows, each a plain ``build_...(events)`` that works on batch DataFrames too.

Run
  python streaming_tutorial/17_ecommerce_pipeline.py --available-now   # the files there now, then exit

What you'll see
  (work in progress)
"""

from __future__ import annotations

from pyspark.sql import DataFrame, functions as F

from common import cli, paths, sources
from common.runner import finish, lesson_session, run_lesson
from common.schemas import ECOMMERCE_EVENT_SCHEMA

LESSON = "17_ecommerce_pipeline"
REVENUE_WINDOW, FUNNEL_WINDOW = "5 minutes", "2 minutes"
WATERMARK_DELAY = "10 minutes"  # how late an event may be and still count in its window
EVENT_TIME = "timestamp"  # the event-time column of ECOMMERCE_EVENT_SCHEMA


def build_category_revenue(events: DataFrame) -> DataFrame:
    """Purchases, revenue and average price per category per 5-minute window of event time.

    ``events``: the good shop events (ECOMMERCE_EVENT_SCHEMA, event time in ``timestamp``),
    streaming or batch; on a batch DataFrame withWatermark does nothing.
    """
    purchases = events.where(F.col("event_type") == "purchase").withWatermark(EVENT_TIME, WATERMARK_DELAY)
    return (purchases.groupBy(F.window(EVENT_TIME, REVENUE_WINDOW).alias("window"), "category")
            .agg(F.count("*").alias("purchases"),
                 # Rounded so the totals read like money (doubles add up to 0.30000000000000004).
                 F.round(F.sum(F.col("price") * F.col("quantity")), 2).alias("revenue"),
                 F.round(F.avg("price"), 2).alias("avg_price"))
            .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                    "category", "purchases", "revenue", "avg_price"))


def build_funnel(events: DataFrame) -> DataFrame:
    """Views, carts and purchases per 2-minute window of event time (streaming or batch ``events``)."""
    return (events.groupBy(F.window(EVENT_TIME, FUNNEL_WINDOW).alias("window"))
            .agg(*[F.count_if(F.col("event_type") == kind).alias(name)
                   for kind, name in (("view", "views"), ("cart", "carts"), ("purchase", "purchases"))])
            .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                    "views", "carts", "purchases"))


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, available_now=True).parse_args(argv)
    with lesson_session(LESSON, args) as spark:
        parsed = sources.parse_json(sources.read_json_lines(spark, paths.ECOMMERCE_DIR), ECOMMERCE_EVENT_SCHEMA)
        events = sources.valid_records(parsed, ECOMMERCE_EVENT_SCHEMA)
        finish([build_funnel(events).writeStream.format("console").outputMode("complete")
                .trigger(availableNow=True).start()])


if __name__ == "__main__":
    run_lesson(main)

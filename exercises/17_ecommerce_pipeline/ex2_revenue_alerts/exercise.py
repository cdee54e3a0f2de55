"""Exercise 17.2 · Alerts from the revenue table (build) — practises lesson 17, chained queries.

The capstone's revenue windows become a table others read: the finance team's alerts are
computed from it, not from the raw events. Write the pipeline's scheduled run, two queries:
  - revenue: build_category_revenue(events) (given) into the Delta table revenue_table, each
    window once, when the watermark has closed it;
  - alerts: revenue_table read back as a stream, and its windows whose revenue reached
    REVENUE_TARGET (500.0 counts) appended to the Delta table alerts_table, with the same
    columns. Write build_revenue_alerts for that filter.
Each query reads what there is, then stops (availableNow). The alerts can only read what the
revenue query has committed, so run_pipeline returns once both have stopped. Each query keeps
its own checkpoint, under the folder checkpoints, and resumes from it on the next run.

The check calls run_pipeline on the first files, then again (a restart) once two more files
have landed, read two per micro-batch (other batch boundaries). After each run it reads both
tables back whole and compares every row:
  table                           "revenue" or "alerts"
  window_start, window_end        the 5-minute window
  category, purchases, revenue    the window's category, its purchases and revenue
(its tables show run 1 as batch 0 and the restart as batch 1)
It also checks that each query resumed (the same query id on the restart), that each has a
checkpoint of its own, that each stopped by itself, and that the alerts query reads the revenue
table.

Input: a stream of shop events with common.schemas.ECOMMERCE_EVENT_SCHEMA (event_id, user_id,
event_type, product_id, product_name, category, price, quantity, timestamp), read from files.

The check takes about 20 seconds (measured on 2 cores: each scenario runs two Delta queries,
twice).

Check it:  python course.py exercises check 17.2
Stuck?     python course.py exercises hint 17.2
"""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from common import paths  # noqa: F401  (paths.uri(folder): a folder as Spark wants it)

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
    raise NotImplementedError("TODO: run the two queries, one after the other")


def build_revenue_alerts(revenue: DataFrame) -> DataFrame:
    """The windows whose revenue reached REVENUE_TARGET, with the revenue table's columns."""
    raise NotImplementedError("TODO: the alerts' filter")


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

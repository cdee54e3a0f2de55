"""The shop's sales per category: lesson 10 adds them up batch by batch, lesson 11 reuses them.

Lesson 10 (foreachBatch) computes them for each micro-batch and adds them to the totals in a
database; lesson 11 (Delta Lake) computes them over a whole stream and keeps the current
totals in a Delta table, in complete mode. One aggregation, written once::

    sales = build_category_sales(events)   # category, purchases, units, revenue
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def build_category_sales(events: DataFrame) -> DataFrame:
    """Purchases, units and revenue per category of the shop's (parsed, good) events."""
    # No watermark and no window: on a stream, a result that only complete (or update)
    # mode can emit, since any later purchase changes a category's totals.
    return (
        events.filter(F.col("event_type") == "purchase")
        .groupBy("category")
        .agg(
            F.count("*").alias("purchases"),
            F.sum("quantity").alias("units"),
            # Rounded so the totals read like money (doubles add up to 0.30000000000000004).
            F.round(F.sum(F.col("price") * F.col("quantity")), 2).alias("revenue"),
        )
    )

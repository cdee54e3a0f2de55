"""Exercise 11.1 · The latest event per user — a reference solution (lesson 11's
build_latest_per_user and write_latest_per_user)."""

from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from common import paths

# When MERGE updates a user's row: the batch's event is newer (ties broken by event id).
NEWER_EVENT = (
    "s.last_seen > t.last_seen OR (s.last_seen = t.last_seen AND s.last_event_id > t.last_event_id)"
)


def build_latest_per_user(events: DataFrame) -> DataFrame:
    """One row per user: their latest event in this (batch) DataFrame."""
    # MERGE needs at most one source row per target row, so a batch with three events of the
    # same user is reduced to the latest one first (ties broken by event id).
    latest_first = Window.partitionBy("user_id").orderBy(
        F.col("timestamp").desc(), F.col("event_id").desc()
    )
    return (
        events.withColumn("rank", F.row_number().over(latest_first))
        .filter("rank = 1")
        .select(
            "user_id",
            F.col("event_id").alias("last_event_id"),
            F.col("event_type").alias("last_event_type"),
            F.col("product_id").alias("last_product_id"),
            F.col("timestamp").alias("last_seen"),
        )
    )


def write_latest_per_user(batch: DataFrame, table: Path) -> None:
    """Upsert one row per user, their latest event, into the Delta table ``table`` (creating
    the table if needed)."""
    spark = batch.sparkSession
    latest = build_latest_per_user(batch)
    if not DeltaTable.isDeltaTable(spark, paths.uri(table)):
        # An empty table with the right columns: from then on every batch is a MERGE.
        latest.limit(0).write.format("delta").save(paths.uri(table))
    (
        DeltaTable.forPath(spark, paths.uri(table))
        .alias("t")
        .merge(latest.alias("s"), "t.user_id = s.user_id")
        # Only move forward in time: a late (older) event leaves the newer row as it is.
        .whenMatchedUpdateAll(condition=NEWER_EVENT)
        .whenNotMatchedInsertAll()
        .execute()
    )

"""A known mistake: every event of the batch goes into the MERGE, so a user with two events in a
batch is two source rows for one target row, and Delta refuses the MERGE."""

from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import paths

NEWER_EVENT = "s.last_seen > t.last_seen"


def write_latest_per_user(batch: DataFrame, table: Path) -> None:
    spark = batch.sparkSession
    latest = batch.select(
        "user_id",
        F.col("event_id").alias("last_event_id"),
        F.col("event_type").alias("last_event_type"),
        F.col("product_id").alias("last_product_id"),
        F.col("timestamp").alias("last_seen"),
    )
    if not DeltaTable.isDeltaTable(spark, paths.uri(table)):
        latest.limit(0).write.format("delta").save(paths.uri(table))
    (
        DeltaTable.forPath(spark, paths.uri(table))
        .alias("t")
        .merge(latest.alias("s"), "t.user_id = s.user_id")
        .whenMatchedUpdateAll(condition=NEWER_EVENT)
        .whenNotMatchedInsertAll()
        .execute()
    )

"""Exercise 10.1 · Totals a replay cannot double — a reference solution.

Each batch computes the new totals (the table's totals plus the batch's sales) and replaces the
table with them in one Delta commit that carries (query id, batch id) as (txnAppId,
txnVersion). Delta records that pair in the same commit as the data and skips a later write
whose txnVersion is not higher: a retried batch writes nothing. (A MERGE that adds only where
``last_batch < batch_id`` is another way: lesson 11.)
"""

from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import paths
from common.batch_ids import query_id
from common.sales import build_category_sales


def write_category_totals(batch: DataFrame, batch_id: int, table: Path) -> None:
    """Add the batch's sales per category to the totals in the Delta table ``table``, once per
    ``batch_id``: running the same batch id again must change nothing."""
    spark = batch.sparkSession
    path = paths.uri(table)
    added = build_category_sales(batch).withColumn("last_batch", F.lit(batch_id))
    if DeltaTable.isDeltaTable(spark, path):
        # The totals so far and this batch's sales, added up: one row per category again.
        totals = (
            spark.read.format("delta")
            .load(path)
            .unionByName(added)
            .groupBy("category")
            .agg(
                F.sum("purchases").alias("purchases"),
                F.sum("units").alias("units"),
                F.round(F.sum("revenue"), 2).alias("revenue"),
                F.max("last_batch").alias("last_batch"),
            )
        )
    else:
        totals = added  # the first batch: its sales are the totals
    (
        # Overwrite: the table becomes the new totals, in one commit (a reader never sees half).
        totals.write.format("delta")
        .mode("overwrite")
        # The query's id stays the same across restarts (it is in the checkpoint), and a retried
        # batch has the same id: Delta skips the write when this pair was committed before.
        .option("txnAppId", query_id(batch))
        .option("txnVersion", batch_id)
        .save(path)
    )

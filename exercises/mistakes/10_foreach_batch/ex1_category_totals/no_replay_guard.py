"""A known mistake: the right totals, but no txnAppId/txnVersion: a retried batch adds again."""

from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import paths
from common.sales import build_category_sales


def write_category_totals(batch: DataFrame, batch_id: int, table: Path) -> None:
    spark = batch.sparkSession
    path = paths.uri(table)
    added = build_category_sales(batch).withColumn("last_batch", F.lit(batch_id))
    if DeltaTable.isDeltaTable(spark, path):
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
        totals = added
    totals.write.format("delta").mode("overwrite").save(path)

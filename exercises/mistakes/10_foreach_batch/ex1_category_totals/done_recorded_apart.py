"""A known mistake: the data written, then the batch id recorded as done in a second write;
stopped between the two, the batch runs again and writes its data twice."""

from pathlib import Path

from delta.tables import DeltaTable  # noqa: F401  (you may need it)
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

from common import paths  # noqa: F401  (paths.uri(table): the address Spark gets for a path)
from common.batch_ids import query_id  # noqa: F401  (the query's id, the same after a restart)
from common.sales import build_category_sales  # noqa: F401  (one batch's sales per category)


def write_category_totals(batch: DataFrame, batch_id: int, table: Path) -> None:
    """Add the batch's sales per category to the totals in the Delta table ``table``, once per
    ``batch_id``: running the same batch id again must change nothing."""
    spark = batch.sparkSession
    location = paths.uri(table)
    # Lesson 10's applied_batches, as a Delta table beside the totals.
    applied = paths.uri(table.parent / f"{table.name}_applied_batches")
    app_id = query_id(batch)
    if DeltaTable.isDeltaTable(spark, applied):
        seen = (
            spark.read.format("delta")
            .load(applied)
            .filter((F.col("app_id") == app_id) & (F.col("batch_id") == batch_id))
            .count()
        )
        if seen:
            return
    sales = build_category_sales(batch).withColumn("last_batch", F.lit(batch_id).cast("long"))
    if DeltaTable.isDeltaTable(spark, location):
        sales = spark.read.format("delta").load(location).unionByName(sales)
    totals = sales.groupBy("category").agg(
        F.sum("purchases").alias("purchases"),
        F.sum("units").alias("units"),
        F.round(F.sum("revenue"), 2).alias("revenue"),
        F.max("last_batch").alias("last_batch"),
    )
    totals.write.format("delta").mode("overwrite").save(location)
    # Then claim the batch.
    (
        spark.createDataFrame([(app_id, batch_id)], "app_id STRING, batch_id LONG")
        .write.format("delta")
        .mode("append")
        .save(applied)
    )

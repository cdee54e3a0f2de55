"""A known mistake: each batch's sales appended as they are, so a category repeats."""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import paths
from common.sales import build_category_sales


def write_category_totals(batch: DataFrame, batch_id: int, table: Path) -> None:
    sales = build_category_sales(batch).withColumn("last_batch", F.lit(batch_id))
    sales.write.format("delta").mode("append").save(paths.uri(table))

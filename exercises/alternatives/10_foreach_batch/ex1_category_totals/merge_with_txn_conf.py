"""Another right answer: instead of re-writing the whole table, it MERGEs the batch's sales into
it, adding them to a matched category and inserting a new one. The replay guard is Delta's own,
set for a MERGE through the session confs spark.databricks.delta.write.txnAppId/txnVersion
(delta-spark 4.4's DeltaCommand.getTxnVersionAndAppId reads them; MergeIntoCommand checks
hasBeenExecuted and commits a SetTransaction with the data): the batch id is recorded in the
same commit, and a replayed batch id is skipped. The confs are unset afterwards so the table-
creating write and later writes do not inherit them."""

from pathlib import Path

from delta.tables import DeltaTable  # noqa: F401  (you may need it)
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

from common import paths  # noqa: F401  (paths.uri(table): the address Spark gets for a path)
from common.batch_ids import query_id  # noqa: F401  (the query's id, the same after a restart)
from common.sales import build_category_sales  # noqa: F401  (one batch's sales per category)

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"


def write_category_totals(batch: DataFrame, batch_id: int, table: Path) -> None:
    """Add the batch's sales per category to the totals in the Delta table ``table``, once per
    ``batch_id``: running the same batch id again must change nothing."""
    spark = batch.sparkSession
    location = paths.uri(table)
    sales = build_category_sales(batch).select(
        "category",
        F.col("purchases").cast("long").alias("purchases"),
        F.col("units").cast("long").alias("units"),
        "revenue",
        F.lit(batch_id).cast("long").alias("last_batch"),
    )
    if not DeltaTable.isDeltaTable(spark, location):
        sales.limit(0).write.format("delta").save(location)
    spark.conf.set(TXN_APP_ID, query_id(batch))
    spark.conf.set(TXN_VERSION, str(batch_id))
    try:
        (
            DeltaTable.forPath(spark, location)
            .alias("t")
            .merge(sales.alias("s"), "t.category = s.category")
            .whenMatchedUpdate(
                set={
                    "purchases": "t.purchases + s.purchases",
                    "units": "t.units + s.units",
                    "revenue": "round(t.revenue + s.revenue, 2)",
                    "last_batch": "s.last_batch",
                }
            )
            .whenNotMatchedInsertAll()
            .execute()
        )
    finally:
        spark.conf.unset(TXN_APP_ID)
        spark.conf.unset(TXN_VERSION)

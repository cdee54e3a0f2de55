"""Another right answer: a Delta table under target (Parquet with a log), appended with txnAppId =
the query's id (kept in the checkpoint, the same after a restart) and txnVersion = batch_id, as
lesson 16 does. ONE write: the data files and the (app id, batch id) pair commit together in the
log, or not at all. Killed before the commit, nothing is visible and the replay writes the
batch; killed after it (sink returned, Spark's commit missing), the replay finds the pair and
Delta skips the write."""

from pyspark.sql import DataFrame

from common.batch_ids import query_id


def write_batch(batch_df: DataFrame, batch_id: int, target: str) -> None:
    """Write the micro-batch ``batch_df`` under the folder ``target`` (a path), exactly once per
    ``batch_id``, even when Spark runs the same batch id again after a crash."""
    (
        batch_df.write.format("delta")
        .mode("append")
        .options(txnAppId=query_id(batch_df), txnVersion=str(batch_id))
        .save(target)
    )

"""A known mistake: a plain append that ignores the batch id; a replayed batch is written twice."""

from pyspark.sql import DataFrame


def write_batch(batch_df: DataFrame, batch_id: int, target: str) -> None:
    batch_df.write.mode("append").parquet(target)

"""Exercise 16.1 · A sink that survives kill -9 — a reference solution.

Each batch id gets a folder of its own, written with mode("overwrite"): a replay of that batch
id replaces its own files (the same rows) and touches no other batch's. Reading ``target``
reads every batch_id=N folder (a partition column). (Delta's txnAppId/txnVersion, lesson 11
and lesson 16's Delta sink, is the other way: the table's log remembers which batch ids it
holds.)
"""

from pathlib import Path

from pyspark.sql import DataFrame


def write_batch(batch_df: DataFrame, batch_id: int, target: str) -> None:
    """Write the micro-batch under ``target``/batch_id=N, replacing what a crashed run of the
    same batch id left there."""
    # An overwrite first removes what the folder holds, then writes: a run killed in the middle
    # leaves a partial folder, and the replay replaces it whole.
    batch_df.write.mode("overwrite").parquet(str(Path(target) / f"batch_id={batch_id}"))

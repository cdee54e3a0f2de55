"""Exercise 16.1 · A sink that survives kill -9 (survive) — practises lesson 16, idempotent sinks.

Spark's checkpoint makes the source replayable: after a crash, a micro-batch whose sink ran but
whose commit was never written runs AGAIN, with the same batch id and the same rows. A sink is
exactly-once only if writing one batch id twice leaves the same result as writing it once.

Write ``write_batch``, the foreachBatch function of a query that copies records to Parquet
files under ``target`` (plain Parquet, or a Delta table, which is Parquet with a log). The
check runs your query in a separate process and kills it with SIGKILL twice, restarting it on
its checkpoint each time: once right after your sink returned (before Spark committed the
batch), and once inside your sink, between two of its writes (when it makes more than one).
Then it reads ``target``: it passes only with 0 rows lost and 0 rows duplicated.

Expected columns in ``target`` (any order; the batch's own columns, nothing added):
  record_id, user_id, amount, event_time

Input: a stream of records, schema "record_id STRING, user_id STRING, amount DOUBLE,
event_time TIMESTAMP" (lesson 16's).

The check takes about 30 seconds (measured on 2 cores; it starts six Spark processes).

Check it:  python course.py exercises check 16.1
Stuck?     python course.py exercises hint 16.1
"""

from pyspark.sql import DataFrame


def write_batch(batch_df: DataFrame, batch_id: int, target: str) -> None:
    """Write the micro-batch ``batch_df`` under the folder ``target`` (a path), exactly once per
    ``batch_id``, even when Spark runs the same batch id again after a crash."""
    raise NotImplementedError("TODO: write the batch so that a replay changes nothing")

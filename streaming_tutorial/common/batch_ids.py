"""What an idempotent foreachBatch write is keyed by: the query's id, with the batch id.

Lesson 10 teaches the idempotent write: a replayed micro-batch carries the same batch id, and
the query keeps its id across restarts (it is stored in the checkpoint's ``metadata`` file), so
(query id, batch id) names one batch's output for good. Lessons 16 and 17 reuse it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame


def query_id(batch: DataFrame) -> str:
    """The id of the query running this micro-batch, read inside a foreachBatch function.

    Spark sets it as a local property of the thread that runs the batch. It is kept in the
    checkpoint: a restart has the same one, a new checkpoint a new one. Classic Spark only: over
    Spark Connect a session has no ``sparkContext`` (JVM_ATTRIBUTE_NOT_SUPPORTED).
    """
    return batch.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")

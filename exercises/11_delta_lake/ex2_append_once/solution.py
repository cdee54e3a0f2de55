"""Exercise 11.2 · Exactly once into Delta — a reference solution (lesson 10's
write_delta_once).

Delta keeps, per txnAppId, the highest txnVersion committed, in the same commit as the data: a
write whose txnVersion is not higher is skipped, atomically. The app id is the query's id, kept
in the checkpoint: the same after a restart, a new one for a new checkpoint, whose batch ids
start from 0 again.
"""

from pathlib import Path

from pyspark.sql import DataFrame

from common import paths
from common.batch_ids import query_id


def write_events_once(batch: DataFrame, batch_id: int, table: Path) -> None:
    """Append the micro-batch to the Delta table ``table``, once per batch of this query: the
    same batch id again must add nothing."""
    (
        batch.write.format("delta")
        .mode("append")
        # (query id, batch id) names this batch's write for good. A fixed app id would make a
        # NEW query (new checkpoint, batch ids from 0) skip every batch up to the old highest id.
        .option("txnAppId", query_id(batch))
        .option("txnVersion", batch_id)
        .save(paths.uri(table))
    )

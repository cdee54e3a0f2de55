"""Another right answer: Delta's guard with another key layout: the app id names the query AND the
batch (<query id>-<batch id>) and the version is always 0. A batch's first write commits version
0 for its own app id with the data; a replay finds version 0 committed for that app id and is
skipped. A new checkpoint has a new query id, so its batch 0, 1... are new app ids and are
written. (The log keeps one SetTransaction per batch instead of one per query: more entries,
same guarantee.)"""

from pathlib import Path

from pyspark.sql import DataFrame

from common import paths  # noqa: F401  (paths.uri(table): the address Spark gets for a path)
from common.batch_ids import query_id  # noqa: F401  (the query's id, the same after a restart)


def write_events_once(batch: DataFrame, batch_id: int, table: Path) -> None:
    """Append the micro-batch to the Delta table ``table``, once per batch of this query: the
    same batch id again must add nothing."""
    (
        batch.write.format("delta")
        .mode("append")
        .option("txnAppId", f"{query_id(batch)}-{batch_id}")
        .option("txnVersion", 0)
        .save(paths.uri(table))
    )

"""A known mistake: events whose id the table already holds are left out, so an event the
source sent twice, in two batches, is kept once: deduplication, not exactly-once."""

from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame

from common import paths  # noqa: F401  (paths.uri(table): the address Spark gets for a path)
from common.batch_ids import query_id  # noqa: F401  (the query's id, the same after a restart)


def write_events_once(batch: DataFrame, batch_id: int, table: Path) -> None:
    """Append the micro-batch to the Delta table ``table``, once per batch of this query: the
    same batch id again must add nothing."""
    spark = batch.sparkSession
    location = paths.uri(table)
    new_events = batch
    if DeltaTable.isDeltaTable(spark, location):
        stored = spark.read.format("delta").load(location).select("event_id")
        # Only events the table does not hold: a replayed batch adds nothing.
        new_events = batch.join(stored, "event_id", "left_anti")
    new_events.write.format("delta").mode("append").save(paths.uri(table))

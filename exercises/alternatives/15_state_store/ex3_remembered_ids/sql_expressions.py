"""Another right answer: the operator looked up with a SQL condition, the columns made with
selectExpr, and the last committed batch asked for by its id from state-metadata."""

from pathlib import Path

from pyspark.sql import DataFrame

from common import paths


def read_remembered_ids(spark, checkpoint: Path, batch_id: int | None = None) -> DataFrame:
    """The reading ids the query's deduplication keeps in state after micro-batch ``batch_id``
    (None: the last committed one), with the time each may be forgotten."""
    location = paths.uri(checkpoint)
    deduplication = (
        spark.read.format("state-metadata")
        .load(location)
        .where("operatorName = 'dedupeWithinWatermark'")
        .first()
    )
    # maxBatchId: the last batch the operator committed state for.
    batch = deduplication.maxBatchId if batch_id is None else batch_id
    return (
        spark.read.format("statestore")
        .option("operatorId", deduplication.operatorId)
        .option("batchId", batch)
        .load(location)
        .selectExpr(
            "key.reading_id AS reading_id",
            "timestamp_micros(value.expiresAtMicros) AS forget_after",
        )
    )

"""Exercise 15.3 · What the deduplication remembers — a reference solution."""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import paths

DEDUPLICATION = "dedupeWithinWatermark"  # the operatorName state-metadata gives it (Spark 4.2)


def read_remembered_ids(spark, checkpoint: Path, batch_id: int | None = None) -> DataFrame:
    """The reading ids the query's deduplication keeps in state after micro-batch ``batch_id``
    (None: the last committed one), with the time each may be forgotten."""
    location = paths.uri(checkpoint)
    # state-metadata lists each stateful operator of the checkpoint: its id is its place in
    # this query's plan, so look the deduplication up by name.
    operators = spark.read.format("state-metadata").load(location)
    deduplication = operators.where(F.col("operatorName") == DEDUPLICATION).first()
    # statestore reads one operator's state, every partition of it, as of the last committed
    # batch; batchId reads it as it was after an older one.
    reader = spark.read.format("statestore").option("operatorId", deduplication.operatorId)
    if batch_id is not None:
        reader = reader.option("batchId", batch_id)
    state = reader.load(location)
    # The key is the deduplication's columns; the value, when the id expires, in microseconds
    # since the epoch.
    return state.select(
        F.col("key.reading_id").alias("reading_id"),
        F.timestamp_micros("value.expiresAtMicros").alias("forget_after"),
    )

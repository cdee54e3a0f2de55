"""A known mistake: statestore read without operatorId (operator 0, whatever it is)."""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import paths


def read_remembered_ids(spark, checkpoint: Path, batch_id: int | None = None) -> DataFrame:
    """The reading ids the query's deduplication keeps in state after micro-batch ``batch_id``
    (None: the last committed one), with the time each may be forgotten."""
    location = paths.uri(checkpoint)
    # The checkpoint's state, as of the last committed batch (or batch_id).
    reader = spark.read.format("statestore")
    if batch_id is not None:
        reader = reader.option("batchId", batch_id)
    state = reader.load(location)
    # The key is the deduplication's columns; the value, when the id expires, in microseconds
    # since the epoch.
    return state.select(
        F.col("key.reading_id").alias("reading_id"),
        F.timestamp_micros("value.expiresAtMicros").alias("forget_after"),
    )

"""Another right answer: the operator found by a loop over state-metadata's rows, the options
given as a dict, the expiry divided down to seconds and cast."""

from pathlib import Path

from pyspark.sql import DataFrame

from common import paths


def read_remembered_ids(spark, checkpoint: Path, batch_id: int | None = None) -> DataFrame:
    """The reading ids the query's deduplication keeps in state after micro-batch ``batch_id``
    (None: the last committed one), with the time each may be forgotten."""
    location = paths.uri(checkpoint)
    options = {}
    for operator in spark.read.format("state-metadata").load(location).collect():
        if operator.operatorName == "dedupeWithinWatermark":
            options["operatorId"] = operator.operatorId
    if batch_id is not None:
        options["batchId"] = batch_id
    state = spark.read.format("statestore").options(**options).load(location)
    return state.select(
        state.key.reading_id.alias("reading_id"),
        (state.value.expiresAtMicros / 1_000_000).cast("timestamp").alias("forget_after"),
    )

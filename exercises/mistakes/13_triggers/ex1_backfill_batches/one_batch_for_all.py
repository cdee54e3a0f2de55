"""A known mistake: availableNow taken for once, one batch of everything."""

from pathlib import Path

from pyspark.sql import DataFrame

from common import paths
from common.schemas import TRANSACTION_SCHEMA

MAX_FILES_PER_TRIGGER = 2  # the source's limit: new files per micro-batch


def read_payments(spark, folder: Path) -> DataFrame:
    """The payments in ``folder``'s files, at most MAX_FILES_PER_TRIGGER files per batch."""
    return (
        spark.readStream.schema(TRANSACTION_SCHEMA)
        .option("maxFilesPerTrigger", MAX_FILES_PER_TRIGGER)
        .json(paths.uri(folder))
    )


def start_backfill(payments: DataFrame, checkpoint: Path, write_batch):
    """What is in the folder now, in batches that respect the source's limit; then stop."""
    return (
        payments.writeStream.foreachBatch(write_batch)
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(availableNow=True)
        .start()
    )


PREDICTION = {"first run": [11], "second run": [5]}

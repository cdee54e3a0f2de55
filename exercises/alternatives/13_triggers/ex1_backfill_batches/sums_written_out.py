"""Another right answer: the same numbers as each batch's two files added up, oldest first: (3 +
1), (2 + 4), 1; then the three new files only: (2 + 1), 2."""

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


# For each run, the number of payments each of its micro-batches reads, in order.
# For example: {"first run": [5, 5, 5], "second run": [7]}
PREDICTION = {"first run": [3 + 1, 2 + 4, 1], "second run": [2 + 1, 2]}

"""Exercise 13.1 · A backfill in batches — a reference solution."""

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


# availableNow reads the files there at the start, but still in micro-batches that respect
# maxFilesPerTrigger: it counts files, not rows. The first run: files 1+2 (3 + 1), files 3+4
# (2 + 4), file 5 (1), then it stops. The checkpoint lists the five files read, so the second
# run reads only the three new ones: 2 + 1, then 2.
PREDICTION = {"first run": [4, 6, 1], "second run": [3, 2]}

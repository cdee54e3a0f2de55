"""Exercise 13.1 · A backfill in batches (predict) — practises lesson 13, availableNow's batches.

The query below reads a folder of JSON payment files, at most MAX_FILES_PER_TRIGGER new files
per micro-batch (oldest first), and runs with trigger(availableNow=True).

First run: the folder holds five files, written in this order, with 3, 1, 2, 4 and 1
payments. start_backfill runs until it stops by itself.
Second run: three more files arrive, with 2, 1 and 2 payments, and start_backfill runs again
on the same checkpoint.

Predict how many payments each micro-batch of each run reads (the rows write_batch
receives), in the order the batches run. Do not run it: reason it out, then check.

Input: files of payments with common.schemas.TRANSACTION_SCHEMA, one payment a line.

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 13.1
Stuck?     python course.py exercises hint 13.1
"""

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
PREDICTION = ...  # TODO: your prediction

"""Another right answer: works it out: each run reads only the files that arrived since the
checkpoint, oldest first, MAX_FILES_PER_TRIGGER files per batch, a batch's payments being its
files' lines. Gives {"first run": [4, 6, 1], "second run": [3, 2]}."""

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
def _batches(payments_per_file: list[int]) -> list[int]:
    return [
        sum(payments_per_file[start : start + MAX_FILES_PER_TRIGGER])
        for start in range(0, len(payments_per_file), MAX_FILES_PER_TRIGGER)
    ]


PREDICTION = {"first run": _batches([3, 1, 2, 4, 1]), "second run": _batches([2, 1, 2])}

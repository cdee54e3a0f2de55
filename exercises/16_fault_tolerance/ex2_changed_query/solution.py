"""Exercise 16.2 · What an old checkpoint survives (predict) — practises lesson 16, changed queries.

start_counts below counts payments per 1-minute event-time window, with a 1-minute watermark,
and appends each window, once it is final, to a folder of JSON files. It has run once: its
folder held the two files of PAYMENTS_BEFORE, read one per micro-batch (availableNow), and it
wrote the windows the watermark had closed.

Then the two files of PAYMENTS_AFTER arrive, and the query is started again ON THE SAME
CHECKPOINT, with one change to its code. Each function in CHANGES is one such change. For each,
predict what the restart does:

  RESUMES        it runs on and ends as the changed query would have, had it run from the
                 start on a fresh checkpoint: the same rows in its output folder, the same rows
                 read by each micro-batch, its state in the same number of partitions;
  DIFFERS        it runs on, but does not end as that fresh start would have: its output folder
                 holds something else, or the change did not take effect;
  an error class Spark refuses it: start() returns, then the first micro-batch stops the query
                 with this error class, e.g. "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE".

Do not run them: reason it out from lesson 16, then check. The check runs start_counts on
PAYMENTS_BEFORE, then each change on a copy of the checkpoint and folder it left, and the same
change from a fresh start (on PAYMENTS_BEFORE, then on all four files), and compares.

Input: payments with record_id, user_id, amount and event_time (lesson 16's records), one
file per inner list below, in that order.

The check takes about 20 seconds (measured on 2 cores: 24 short runs of the query and its
changes).

Check it:  python course.py exercises check 16.2
Stuck?     python course.py exercises hint 16.2
"""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from common import paths

SCHEMA = "record_id STRING, user_id STRING, amount DOUBLE, event_time TIMESTAMP"
WINDOW = "1 minute"
WATERMARK = "1 minute"  # how late a payment may arrive
MAX_FILES_PER_TRIGGER = 1  # new files per micro-batch, oldest first

# One file per inner list: (record_id, user_id, amount, event time on 2025-01-15).
PAYMENTS_BEFORE = [
    [("R1", "U1", 5.0, "10:00:05"), ("R2", "U2", 7.0, "10:00:40")],
    [("R3", "U1", 3.0, "10:01:10"), ("R4", "U2", 1.0, "10:02:30")],
]
PAYMENTS_AFTER = [
    [("R5", "U1", 0.0, "10:02:10"), ("R6", "U2", 4.0, "10:01:40")],
    [("R7", "U1", 2.0, "10:03:30"), ("R8", "U2", 6.0, "10:04:10")],
]

RESUMES = "resumes"
DIFFERS = "differs"


def read_payments(spark, folder: Path, max_files: int = MAX_FILES_PER_TRIGGER) -> DataFrame:
    """The payment files in ``folder``, as a stream: ``max_files`` new files per micro-batch."""
    return (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", max_files)
        .json(paths.uri(folder))
    )


def count_per_window(
    payments: DataFrame, window: str = WINDOW, watermark: str = WATERMARK, keys: tuple = ()
) -> DataFrame:
    """Payments per event-time window (and per ``keys``): the state the checkpoint keeps."""
    return (
        payments.withWatermark("event_time", watermark)
        .groupBy(F.window("event_time", window), *keys)
        .agg(F.count("*").alias("records"))
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            *keys,
            "records",
        )
    )


def start_sink(counts: DataFrame, output: Path, checkpoint: Path) -> StreamingQuery:
    """Append each final window to JSON files in ``output``; read what is there, then stop."""
    return (
        counts.writeStream.format("json")
        .outputMode("append")
        .option("path", paths.uri(output))
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(availableNow=True)
        .start()
    )


def start_counts(spark, folder: Path, output: Path, checkpoint: Path) -> StreamingQuery:
    """The query as it first ran, on PAYMENTS_BEFORE."""
    return start_sink(count_per_window(read_payments(spark, folder)), output, checkpoint)


# The changes, each started on the old checkpoint with PAYMENTS_AFTER added to the folder.


def start_with_a_filter(spark, folder: Path, output: Path, checkpoint: Path):
    """Only payments above zero are counted: a filter before the aggregation."""
    payments = read_payments(spark, folder).where(F.col("amount") > 0)
    return start_sink(count_per_window(payments), output, checkpoint)


def start_with_longer_windows(spark, folder: Path, output: Path, checkpoint: Path):
    """Windows of 2 minutes instead of 1."""
    counts = count_per_window(read_payments(spark, folder), window="2 minutes")
    return start_sink(counts, output, checkpoint)


def start_per_user(spark, folder: Path, output: Path, checkpoint: Path):
    """A count per window AND user: another grouping column."""
    counts = count_per_window(read_payments(spark, folder), keys=("user_id",))
    return start_sink(counts, output, checkpoint)


def start_with_a_longer_watermark(spark, folder: Path, output: Path, checkpoint: Path):
    """Payments may arrive 2 minutes late instead of 1."""
    counts = count_per_window(read_payments(spark, folder), watermark="2 minutes")
    return start_sink(counts, output, checkpoint)


def start_with_a_renamed_column(spark, folder: Path, output: Path, checkpoint: Path):
    """The count's column is called payments instead of records."""
    counts = count_per_window(read_payments(spark, folder))
    return start_sink(counts.withColumnRenamed("records", "payments"), output, checkpoint)


def start_into_another_folder(spark, folder: Path, output: Path, checkpoint: Path):
    """The windows go to a new folder beside the old one."""
    counts = count_per_window(read_payments(spark, folder))
    return start_sink(counts, output.with_name(f"{output.name}-v2"), checkpoint)


def start_two_files_per_batch(spark, folder: Path, output: Path, checkpoint: Path):
    """Two new files per micro-batch instead of one."""
    counts = count_per_window(read_payments(spark, folder, max_files=2))
    return start_sink(counts, output, checkpoint)


def start_on_three_partitions(spark, folder: Path, output: Path, checkpoint: Path):
    """The session's shuffle partitions set to 3 (they were 1) before the query starts."""
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    return start_counts(spark, folder, output, checkpoint)


def start_with_a_total(spark, folder: Path, output: Path, checkpoint: Path):
    """Each window's total amount beside its count."""
    counts = (
        read_payments(spark, folder)
        .withWatermark("event_time", WATERMARK)
        .groupBy(F.window("event_time", WINDOW))
        .agg(F.count("*").alias("records"), F.sum("amount").alias("amount"))
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "records",
            "amount",
        )
    )
    return start_sink(counts, output, checkpoint)


CHANGES = [
    start_with_a_filter,
    start_with_longer_windows,
    start_per_user,
    start_with_a_longer_watermark,
    start_with_a_renamed_column,
    start_into_another_folder,
    start_two_files_per_batch,
    start_on_three_partitions,
    start_with_a_total,
]

# For each function of CHANGES, by name: RESUMES, DIFFERS, or the error class Spark stops it
# with.
PREDICTION = {
    "start_with_a_filter": RESUMES,
    "start_with_longer_windows": DIFFERS,
    "start_per_user": "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
    "start_with_a_longer_watermark": RESUMES,
    "start_with_a_renamed_column": DIFFERS,
    "start_into_another_folder": DIFFERS,
    "start_two_files_per_batch": RESUMES,
    "start_on_three_partitions": DIFFERS,
    "start_with_a_total": "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
}

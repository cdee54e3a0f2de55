"""Exercise 07.2 · Which readings are too late? — a reference solution."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

WINDOW_SECONDS = 10  # tumbling windows of 10 s of event time
LATENESS_SECONDS = 10  # withWatermark delay: how far behind the latest event we still wait

# One list per micro-batch, in arrival order: (reading_id, the time it was taken).
SCENARIO = [
    [(1, "10:30:04"), (2, "10:30:15")],
    [(3, "10:30:27"), (4, "10:30:09")],
    [(5, "10:30:12"), (6, "10:30:38")],
    [(7, "10:30:16"), (8, "10:30:08"), (9, "10:30:45")],
    [(10, "10:30:18"), (11, "10:30:29"), (12, "10:30:52")],
]


def build_window_counts(readings: DataFrame) -> DataFrame:
    """Readings per 10 s window of event time, with a watermark of 10 s."""
    # The watermark must be set on the event-time column BEFORE the aggregation.
    readings = readings.withWatermark("event_time", f"{LATENESS_SECONDS} seconds")
    return (
        readings.groupBy(F.window("event_time", f"{WINDOW_SECONDS} seconds"))
        .agg(
            F.count("*").alias("readings"),
            F.array_sort(F.collect_list("reading_id")).alias("reading_ids"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "readings",
            "reading_ids",
        )
    )


# Each batch runs with two watermarks (lesson 07): its own, (latest event time of the batches
# before it) - 10 s, closes windows; the previous batch's drops a reading whose window ended at
# or before it. So a reading in batch N is judged by the latest event time of batches 0 to N-2:
#   batch 0, 1: no watermark yet to drop with: r4 (10:30:09) gets in.
#   batch 2: drops with 10:30:05 (10:30:15 - 10 s): r5's window ends 10:30:20, after it.
#   batch 3: drops with 10:30:17 (10:30:27 - 10 s): r8's window [10:30:00, 10:30:10) ended
#            before it: dropped. r7 (10:30:16) is older than 10:30:17 but its window
#            [10:30:10, 10:30:20) ends after it: it gets in.
#   batch 4: drops with 10:30:28 (10:30:38 - 10 s): r10's window ended at 10:30:20: dropped.
#            r11's [10:30:20, 10:30:30) ends after 10:30:28: it gets in (the batch's own
#            watermark, 10:30:35, then closes that window).
PREDICTION = [[], [], [], [8], [10]]

"""Exercise 07.2 · Which readings are too late? (predict) — practises lesson 07, late rows.

The query below is lesson 07's windowed count: 10-second tumbling windows of event time, with a
10-second watermark. Its input arrives in five micro-batches (SCENARIO below: each reading's id
and the time it was taken, in the order they arrive). Some readings come too late: Spark drops
them, and they are counted in no window.

Predict which readings Spark drops, batch by batch: fill in PREDICTION. The query is not yours
to change: the check runs this file's query as it is written here, in update mode. Then each
micro-batch sends the windows its readings changed, with their reading_ids: a reading that is
in none of them was dropped.

Each row the sink receives, in this order:
  window_start, window_end   the window's start (included) and end (excluded)
  readings                   how many readings the window holds (count)
  reading_ids                their ids, sorted

Input: sensor readings (common.schemas.SENSOR_SCHEMA), all from SENSOR-0, on one day.

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 07.2
Stuck?     python course.py exercises hint 07.2
"""

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


# One list per batch of SCENARIO (five), each with the ids of that batch's readings Spark
# drops as too late, in increasing order; [] for a batch that drops none. For example:
#   [[], [], [5], [], [9, 11]]
PREDICTION = ...  # TODO: which readings each batch drops

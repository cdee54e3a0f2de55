"""Exercise 06.3 · A reading that arrives late (predict) — practises lesson 06, update mode.

The query below counts readings per 10-second tumbling window of event time and runs in update
mode, without a watermark. Its input arrives in three micro-batches (SCENARIO below: each
reading's id and the time it was taken, in the order they arrive). r5 was taken at 10:30:04,
long before r4, but arrives with it; r7 likewise.

Predict what each micro-batch sends to the sink: fill in PREDICTION. The query is not yours to
change: the check runs this file's query as it is written here and compares its output with
your prediction.

Each row the sink receives, in this order:
  window_start, window_end   the window's start (included) and end (excluded), as 'HH:MM:SS'
  readings                   how many readings the window holds (count)

Input: sensor readings (common.schemas.SENSOR_SCHEMA), all from SENSOR-0, on one day.

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 06.3
Stuck?     python course.py exercises hint 06.3
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

WINDOW_SIZE = "10 seconds"  # tumbling windows: [10:30:00, 10:30:10), [10:30:10, 10:30:20), ...

# One list per micro-batch, in arrival order: (reading_id, the time it was taken).
SCENARIO = [
    [(1, "10:30:02"), (2, "10:30:07"), (3, "10:30:14")],
    [(4, "10:30:21"), (5, "10:30:04")],
    [(6, "10:30:20"), (7, "10:30:09")],
]


def build_tumbling_counts(readings: DataFrame) -> DataFrame:
    """Readings per tumbling window of event time; the query runs in update mode."""
    grouped = readings.groupBy(F.window("event_time", WINDOW_SIZE))
    return grouped.agg(F.count("*").alias("readings")).select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "readings",
    )


# One list per micro-batch, each holding one tuple per row that batch sends, in any order:
#   [[("10:29:50", "10:30:00", 1), ...], [...], [...]]
PREDICTION = ...  # TODO: what batches 0, 1 and 2 send

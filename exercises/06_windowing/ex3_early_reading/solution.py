"""Exercise 06.3 · A reading that arrives late — a reference solution."""

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


# Update mode sends, in each batch, only the windows that batch changed, each with its total
# so far (not the batch's share). Event time decides the window, arrival order does not.
PREDICTION = [
    # r1, r2 in [00, 10); r3 in [10, 20).
    [("10:30:00", "10:30:10", 2), ("10:30:10", "10:30:20", 1)],
    # r5 (taken at 10:30:04) joins r1 and r2: 3. r4 opens [20, 30). [10, 20) did not change,
    # so it is not sent again.
    [("10:30:00", "10:30:10", 3), ("10:30:20", "10:30:30", 1)],
    # r6 at exactly 10:30:20 belongs to [20, 30) (a window includes its start); r7 to [00, 10).
    [("10:30:00", "10:30:10", 4), ("10:30:20", "10:30:30", 2)],
]

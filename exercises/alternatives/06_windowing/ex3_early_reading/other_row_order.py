"""Another right answer: update mode sends, per batch, the windows that batch changed with their
totals so far (r5 and r7 land in [10:30:00, 10:30:10) by event time; r6 at 10:30:20 opens
[10:30:20, 10:30:30)); rows are listed in another order within each batch, which is allowed."""

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
PREDICTION = [
    [("10:30:10", "10:30:20", 1), ("10:30:00", "10:30:10", 2)],
    [("10:30:20", "10:30:30", 1), ("10:30:00", "10:30:10", 3)],
    [("10:30:20", "10:30:30", 2), ("10:30:00", "10:30:10", 4)],
]

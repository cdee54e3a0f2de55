"""Exercise 14.2 · What the progress says — a reference solution."""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import paths
from common.schemas import SENSOR_SCHEMA

WINDOW = "10 seconds"  # tumbling windows of event time
WATERMARK_DELAY = "5 seconds"  # the watermark: the latest event time seen, minus 5 s
QUERY_NAME = "window_counts"

# One list per file (so per micro-batch that reads one), in the order the files were written:
# (reading_id, sensor_id, the time it was taken on 2025-01-15, UTC).
SCENARIO = [
    [(1, "S1", "10:30:02"), (2, "S2", "10:30:07"), (3, "S1", "10:30:04")],
    [(4, "S1", "10:30:13"), (5, "S2", "10:30:16")],
    [(6, "S2", "10:30:27"), (7, "S1", "10:30:09")],
    [(8, "S1", "10:30:05"), (9, "S1", "10:30:21")],
    [(10, "S2", "10:30:41")],
]


def read_readings(spark, folder: Path) -> DataFrame:
    """The readings in ``folder``'s files, one new file per micro-batch."""
    return (
        spark.readStream.schema(SENSOR_SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .json(paths.uri(folder))
    )


def build_window_counts(readings: DataFrame) -> DataFrame:
    """Readings per sensor per 10 s window, final once the watermark passes the window's end."""
    return (
        readings.withWatermark("event_time", WATERMARK_DELAY)
        .groupBy(F.window("event_time", WINDOW), "sensor_id")
        .count()
    )


def start_window_counts(counts: DataFrame, checkpoint: Path):
    """Append each final window; the noop sink runs the query and keeps nothing."""
    return (
        counts.writeStream.format("noop")
        .outputMode("append")
        .queryName(QUERY_NAME)
        .option("checkpointLocation", paths.uri(checkpoint))
        .start()
    )


# One tuple per report in query.recentProgress once the query is idle, oldest first.
# A batch runs with the watermark set after the batches before it (latest event time - 5 s);
# a row is dropped when its window ended at or before the previous batch's watermark; a window
# leaves the state in the batch whose own watermark reaches its end (append sends it then).
PREDICTION = [
    # No watermark yet: the epoch. State: [00,10) of S1 and of S2.
    (0, 3, None, 2, 0),
    # 10:30:07 - 5 s. [10,20) of S1 and S2 open; nothing ends by 10:30:02.
    (1, 2, "10:30:02", 4, 0),
    # 10:30:16 - 5 s. r7 (10:30:09) gets in: its window ends after 10:30:02, the previous
    # batch's watermark. Both [00,10) windows close (10:30:10 <= 10:30:11); [20,30) of S2 opens.
    (2, 2, "10:30:11", 3, 0),
    # 10:30:27 - 5 s. r8's window ended before 10:30:11: dropped. [20,30) of S1 opens; both
    # [10,20) windows close.
    (3, 2, "10:30:22", 2, 1),
    # Still 10:30:22: batch 3 brought nothing later than 10:30:27. [40,50) of S2 opens.
    (4, 1, "10:30:22", 3, 0),
    # No file left, but the next watermark, 10:30:41 - 5 s, passes the end of both [20,30)
    # windows: Spark runs a micro-batch without data to close them.
    (5, 0, "10:30:36", 1, 0),
    # Nothing to do: an idle report. It carries the next batch's id, no input, the watermark
    # and numRowsTotal as the last batch left them (and 0 rows dropped).
    (6, 0, "10:30:36", 1, 0),
]

"""Exercise 14.2 · What the progress says (predict) — practises lesson 14, progress reports.

The query below counts each sensor's readings per 10-second window of event time, with a
watermark 5 seconds behind the latest event time, and appends each window once it is final. It
reads a folder of JSON files, one file per micro-batch (SCENARIO below: each file's readings,
in the order they were written), as fast as it can. When it has read every file and has nothing
left to do, it waits for new files; the check waits with it until Spark reports the query idle
(onQueryIdle: after spark.sql.streaming.noDataProgressEventInterval without new data, which the
check sets to 0.1 s), then reads query.recentProgress.

Predict the reports recentProgress holds then, oldest first: one tuple per report,

  (batchId, numInputRows, watermark, numRowsTotal, numRowsDroppedByWatermark)

  watermark                  eventTime["watermark"] as its time of day, 'HH:MM:SS' (all the
                             times are on 2025-01-15, in UTC); None while Spark reports the
                             epoch, 1970-01-01T00:00:00.000Z (no watermark yet)
  numRowsTotal               stateOperators[0]["numRowsTotal"]: the (window, sensor) rows in
                             state after the batch (the query has one stateful operator)
  numRowsDroppedByWatermark  stateOperators[0]["numRowsDroppedByWatermark"]

Do not run it: reason it out, then check. The query is not yours to change: the check runs this
file's query as it is written here.

Input: sensor readings (common.schemas.SENSOR_SCHEMA).

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 14.2
Stuck?     python course.py exercises hint 14.2
"""

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
# For example: [(0, 4, None, 1, 0), (1, 1, "10:29:58", 3, 0), ...]
PREDICTION = ...  # TODO: your prediction

"""Exercise 14.1 · A listener's log of every batch (build) — practises lesson 14, a listener.

Lesson 14's ProgressPrinter prints one line per micro-batch of the queries it watches. Write a
StreamingQueryListener of your own, BatchRecorder: for the query named ``query_name`` (and for
no other), it appends one BatchFacts per micro-batch to ``self.records``, in the order the
batches ran, with what that batch's progress report says:

  batch_id     the micro-batch's id (batchId)
  input_rows   how many rows it read (numInputRows)
  watermark    the event-time watermark it ran with, as Spark writes it
               ('2025-01-15T10:30:14.000Z'); None while there is none yet (Spark then reports
               the epoch, '1970-01-01T00:00:00.000Z')
  state_rows   the rows kept in state after it, over every stateful operator (numRowsTotal)
  dropped      the rows its stateful operators dropped as too late (numRowsDroppedByWatermark)
  flags        a tuple: INPUT_GREW when it read more rows than the query's micro-batch before
               it, LATE_ROWS_DROPPED when dropped > 0 (both: in that order); () for neither

The check adds your listener with spark.streams.addListener(BatchRecorder("sensor_counts")),
starts the query below on files of sensor readings (one file per micro-batch, then
trigger(availableNow=True) stops it) and, at the same time, a second query, "other_readings",
whose events your listener gets too and must leave out. Once every event has reached your
listener, the check removes it and compares your records, batch by batch, with what the query's
own progress (query.recentProgress) says.

    readings.withWatermark("event_time", "10 seconds")
    .dropDuplicatesWithinWatermark(["reading_id"])
    .groupBy(F.window("event_time", "10 seconds"), "sensor_id")
    .count()

Input: files of sensor readings with common.schemas.SENSOR_SCHEMA; the check runs the query.

The check takes about 10 seconds (measured on 2 cores).

Check it:  python course.py exercises check 14.1
Stuck?     python course.py exercises hint 14.1
"""

import json  # noqa: F401  (event.progress.json: the report as JSON text)
from dataclasses import dataclass

from pyspark.sql.streaming import StreamingQueryListener

INPUT_GREW = "INPUT GREW"  # the batch read more rows than the query's batch before it
LATE_ROWS_DROPPED = "LATE ROWS DROPPED"  # the state operators dropped rows as too late


@dataclass
class BatchFacts:
    """What one micro-batch's progress report says (see the exercise's text)."""

    batch_id: int
    input_rows: int
    watermark: str | None
    state_rows: int
    dropped: int
    flags: tuple[str, ...] = ()


class BatchRecorder(StreamingQueryListener):
    """One BatchFacts per micro-batch of the query named ``query_name``, in ``self.records``."""

    def __init__(self, query_name: str) -> None:
        self.query_name = query_name
        self.records: list[BatchFacts] = []

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        raise NotImplementedError("TODO: append this batch's BatchFacts, for query_name only")

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass

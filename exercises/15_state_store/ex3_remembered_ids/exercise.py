"""Exercise 15.3 · What the deduplication remembers (build) — practises lesson 15, reading state.

A query that drops copies with dropDuplicatesWithinWatermark keeps each reading_id it has let
through in its state store, with the time it may forget it: the kept copy's event time + the
watermark's delay. A copy that comes before then is dropped; the first micro-batch whose
watermark reaches that time removes the id from the state.

Write read_remembered_ids: given the checkpoint of such a query (stopped), the ids its
deduplication keeps in state after micro-batch ``batch_id`` (None: the last one it committed),
read back with Spark's state data source (a batch read: spark.read.format(...)), one row each:

  reading_id    the id
  forget_after  when it may be forgotten: the kept copy's event time + 10 s, a timestamp

The check runs each scenario's query to its end (trigger availableNow), then calls your
function for every micro-batch the query ran, and once without a batch_id. The first
scenario's query deduplicates, then counts:

    readings.withWatermark("event_time", "10 seconds")
    .dropDuplicatesWithinWatermark(["reading_id"])
    .groupBy(F.window("event_time", "10 seconds"), "sensor_id")
    .count()

The hidden scenario's query deduplicates within the watermark too, but its stateful operators
are not the same (it drops exact copies first), and its state is spread over three shuffle
partitions: find the deduplication in the checkpoint by what it is, not by where it was in the
first query.

Input: the checkpoint folder of a query on sensor readings (common.schemas.SENSOR_SCHEMA).

The check takes about 10 seconds (measured on 2 cores).

Check it:  python course.py exercises check 15.3
Stuck?     python course.py exercises hint 15.3
"""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

from common import paths  # noqa: F401  (paths.uri(checkpoint): the address Spark gets)


def read_remembered_ids(spark, checkpoint: Path, batch_id: int | None = None) -> DataFrame:
    """The reading ids the query's deduplication keeps in state after micro-batch ``batch_id``
    (None: the last committed one), with the time each may be forgotten."""
    raise NotImplementedError("TODO: read the deduplication's state from the checkpoint")

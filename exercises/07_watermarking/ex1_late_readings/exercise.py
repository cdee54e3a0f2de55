"""Exercise 07.1 · Late readings left out (build) — practises lesson 07, watermarks in append mode.

Count each sensor's readings per 10-second tumbling window of event time, and send each window
once, when it is final: the query runs in append mode. A reading may arrive up to 5 seconds
behind the latest event time seen so far (WATERMARK_DELAY); one that comes later than that,
for a window that is already closed, must be left out (dropped as too late), not counted.

Expected columns, in this order:
  window_start, window_end   the window's start (included) and end (excluded), timestamps
  sensor_id                  the sensor
  readings                   how many of the sensor's readings the window holds (count)

The check also compares, batch by batch, the watermark each micro-batch ran with and how many
rows Spark dropped as too late (numRowsDroppedByWatermark in the query's progress).

Input: a stream of sensor readings with common.schemas.SENSOR_SCHEMA
(reading_id, sensor_id, temperature, humidity, event_time).

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 07.1
Stuck?     python course.py exercises hint 07.1
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

WINDOW_SIZE = "10 seconds"  # tumbling windows of event time
WATERMARK_DELAY = "5 seconds"  # a reading up to this far behind the latest event time counts


def build_sensor_counts(readings: DataFrame) -> DataFrame:
    """Readings per sensor per 10 s window, each window sent once, when it is final."""
    raise NotImplementedError("TODO: write the query")

"""Exercise 06.2 · Sliding averages per sensor (build) — practises lesson 06, sliding windows.

Each sensor's readings and average temperature over the last 20 seconds, refreshed every
10 seconds: windows of 20 s of event time that start every 10 s, so every reading counts in
two windows. The query runs in update mode: each micro-batch sends the windows it changed,
with their totals so far. A reading belongs to the windows of the time it was taken
(event_time), whenever it arrives.

Expected columns, in this order:
  window_start, window_end   the window's start (included) and end (excluded), timestamps
  sensor_id                  the sensor
  readings                   how many of the sensor's readings the window holds (count)
  avg_temp                   their average temperature, rounded half up to 2 decimals
                             (20.125 gives 20.13); a reading without a temperature (null)
                             counts in readings but not in the average

Input: a stream of sensor readings with common.schemas.SENSOR_SCHEMA
(reading_id, sensor_id, temperature, humidity, event_time).

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 06.2
Stuck?     python course.py exercises hint 06.2
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

SLIDING_SIZE = "20 seconds"  # 20 s windows ...
SLIDING_STEP = "10 seconds"  # ... a new one every 10 s


def build_sliding_averages(readings: DataFrame) -> DataFrame:
    """Readings and average temperature per sensor per sliding window of event time."""
    raise NotImplementedError("TODO: write the query")

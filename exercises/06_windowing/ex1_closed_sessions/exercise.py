"""Exercise 06.1 · Sessions that close (build) — practises lesson 06, session windows.

A sensor is "active" while its readings come less than 5 seconds apart. Write the query that
sends each sensor's session once, when it can no longer change: in append mode, a session is
final once the watermark (the latest event time seen minus 10 seconds) has reached its end.

Expected columns, in this order:
  session_start, session_end   the session window's start and end (timestamps)
  sensor_id                    the sensor
  readings                     how many readings the session holds (count), a reading
                               without a temperature (null) too

Input: a stream of sensor readings with common.schemas.SENSOR_SCHEMA
(reading_id, sensor_id, temperature, humidity, event_time).

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 06.1
Stuck?     python course.py exercises hint 06.1
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

SESSION_GAP = "5 seconds"
WATERMARK_DELAY = "10 seconds"


def build_closed_sessions(readings: DataFrame) -> DataFrame:
    """Each sensor's sessions, each sent once, when the watermark has reached its end."""
    raise NotImplementedError("TODO: write the query")

"""Exercise 15.1 · Sessions closed by a timer (build) — practises lesson 15, transformWithState.

A user's session is open until the watermark passes its latest event + 10 seconds of event
time (SESSION_GAP): then no event of it can still come. An event that comes while the session
is open extends it. Write the StatefulProcessor that sends one row per session, when it
closes, and nothing while it is open. Once a session is closed the user is forgotten: a later
event of theirs opens a new session.

Keep each user's session in one ValueState named "session", of SESSION_STATE, and close it
with an event-time timer. Rows bring timezone-aware datetimes in the session time zone (not
always UTC: the check sets another in one scenario), the state gives back naive ones in the
process's local zone (UTC in the course): compare them with in_utc, as lesson 15 does.

The check runs your processor the way lesson 15 does, on the RocksDB state store, with the
settings of this file:

    events.withWatermark("timestamp", WATERMARK_DELAY)
    .groupBy("user_id")
    .transformWithState(SessionCloser(), OUTPUT_SCHEMA, "Update", "EventTime")

Expected columns (OUTPUT_SCHEMA), in this order:
  user_id      the user
  events       how many events the session had
  first_seen   its first event's time
  last_seen    its last event's time

Input: a stream of shop events with common.schemas.ECOMMERCE_EVENT_SCHEMA.

The check also compares how many sessions are left in state after the last batch.

The check takes about 10 seconds (measured on 2 cores).

Check it:  python course.py exercises check 15.1
Stuck?     python course.py exercises hint 15.1
"""

from datetime import datetime, timedelta, timezone

from pyspark.sql import Row  # noqa: F401  (you will need it)
from pyspark.sql.streaming import StatefulProcessor

WATERMARK_DELAY = "5 seconds"  # how late an event may be and still count
SESSION_GAP = timedelta(seconds=10)  # a session closes this long after its last event
OUTPUT_SCHEMA = "user_id STRING, events INT, first_seen TIMESTAMP, last_seen TIMESTAMP"
SESSION_STATE = "events INT, first_seen TIMESTAMP, last_seen TIMESTAMP"  # ValueState 'session'


def in_utc(moment: datetime | None) -> datetime | None:
    """Rows bring aware times, state gives back naive ones: compare both in UTC."""
    return moment and moment.astimezone(timezone.utc)


class SessionCloser(StatefulProcessor):
    """One row per user session, sent when an event-time timer closes it."""

    def init(self, handle):
        pass  # TODO: get the ValueState "session" from the handle (and keep the handle)

    def handleInputRows(self, key, rows, timerValues):
        raise NotImplementedError("TODO: write the processor")

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        raise NotImplementedError("TODO: write the processor")

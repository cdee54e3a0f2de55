"""Exercise 15.1 · Sessions closed by a timer — a reference solution."""

from datetime import datetime, timedelta, timezone

from pyspark.sql import Row
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
        # The handle registers timers; the ValueState keeps one session per user.
        self.handle = handle
        self.session = handle.getValueState("session", SESSION_STATE)

    def handleInputRows(self, key, rows, timerValues):
        # get(): the session so far, or None when the user has no open session.
        events, first_seen, last_seen = self.session.get() or (0, None, None)
        first_seen = in_utc(first_seen)
        last_seen = in_utc(last_seen)
        for row in rows:
            at = in_utc(row.timestamp)
            events += 1
            first_seen = min(first_seen or at, at)
            last_seen = max(last_seen or at, at)
        self.session.update((events, first_seen, last_seen))
        # One timer per user, moved to the session's new end: delete the old one first, or it
        # would close the session too early. An event-time timer fires once the watermark
        # passes it (milliseconds since the epoch).
        for expiry in self.handle.listTimers():
            self.handle.deleteTimer(expiry)
        gap_ms = int(SESSION_GAP.total_seconds() * 1000)
        self.handle.registerTimer(int(last_seen.timestamp() * 1000) + gap_ms)
        # Nothing to send while the session is open.
        return iter([])

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        events, first_seen, last_seen = self.session.get()
        # Forget the session, or the state store keeps every user ever seen.
        self.session.clear()
        # key is a tuple, even for one grouping column.
        yield Row(user_id=key[0], events=events, first_seen=first_seen, last_seen=last_seen)

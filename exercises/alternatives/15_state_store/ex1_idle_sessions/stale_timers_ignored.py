"""Another right answer: instead of deleting the old timer when an event extends the session, it
keeps every timer and ignores a stale one when it fires: handleExpiredTimer closes the session
only when the expiring timer is the session's current end (last_seen + 10 s); an earlier timer
(from before the session was extended) does nothing. Stale timers are earlier than the real one,
so they have all fired and gone by the time it fires; the session is cleared there, and a timer
that finds no session does nothing. Times go through in_utc; the state holds the one ValueState
"session"."""

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


GAP_MS = int(SESSION_GAP.total_seconds() * 1000)


def end_ms(last_seen: datetime) -> int:
    """The moment (epoch ms) a session whose last event is ``last_seen`` closes."""
    return int(in_utc(last_seen).timestamp() * 1000) + GAP_MS


class SessionCloser(StatefulProcessor):
    """One row per user session, sent when an event-time timer closes it."""

    def init(self, handle):
        self.handle = handle
        self.session = handle.getValueState("session", SESSION_STATE)

    def handleInputRows(self, key, rows, timerValues):
        kept = self.session.get()
        times = [in_utc(row.timestamp) for row in rows]
        if kept is not None:
            times += [in_utc(kept[1]), in_utc(kept[2])]
            events = kept[0] + len(times) - 2
        else:
            events = len(times)
        first, last = min(times), max(times)
        self.session.update((events, first, last))
        # A timer at the session's new end; an older one is ignored when it fires.
        self.handle.registerTimer(end_ms(last))
        return iter([])

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        kept = self.session.get()
        if kept is None or expiredTimerInfo.getExpiryTimeInMs() < end_ms(kept[2]):
            return  # a stale timer: the session was extended after it was set
        events, first, last = kept
        self.session.clear()
        yield Row(user_id=key[0], events=events, first_seen=first, last_seen=last)

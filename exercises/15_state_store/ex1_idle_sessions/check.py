from common.schemas import ECOMMERCE_EVENT_SCHEMA
from practice.scenarios import shop_event
from practice.spec import Exercise, Mistake, Scenario

# transformWithState runs on the RocksDB state store only (lesson 15): set for the check's runs.
ROCKSDB = {
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    )
}


def build_closed_sessions(events, module):
    """Lesson 15's wiring, with the learner's processor and the settings of their file."""
    return (
        events.withWatermark("timestamp", module.WATERMARK_DELAY)
        .groupBy("user_id")
        .transformWithState(module.SessionCloser(), module.OUTPUT_SCHEMA, "Update", "EventTime")
    )


def learner_query(module):
    """Lesson 15's wiring around the learner's processor."""

    def build(events):
        return build_closed_sessions(events, module)

    return build


def closing_batches(observation) -> dict:
    """{user: the batch numbers in which a session of theirs closed}."""
    closed = {}
    for number, batch in enumerate(observation.batches):
        for row in batch.rows:
            closed.setdefault(row[0], []).append(number)
    return closed


def never_closes(mine, wanted):
    return any(batch.rows for batch in wanted.batches) and not any(
        batch.rows for batch in mine.batches
    )


def keeps_closed_sessions(mine, wanted):
    """The right rows, but sessions left in state that were closed."""
    same_rows = [batch.rows for batch in mine.batches] == [batch.rows for batch in wanted.batches]
    return same_rows and (mine.state_rows or 0) > (wanted.state_rows or 0)


def closes_early(mine, wanted):
    """A user's session closed in an earlier batch than it should."""
    expected = closing_batches(wanted)
    for user, batches in closing_batches(mine).items():
        if user in expected and min(batches) < min(expected[user]):
            return True
    return False


EXERCISE = Exercise(
    title="Sessions closed by a timer",
    kind="build",
    practises="transformWithState: a ValueState per user, an event-time timer, state cleared",
    function="SessionCloser",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    output_mode="update",
    check_state=True,
    query=learner_query,
    settings=ROCKSDB,
    why=(
        "transformWithState gives each user a ValueState in the state store and event-time "
        "timers: Spark calls handleExpiredTimer for a user once the watermark passes a timer "
        "registered for them. Moving the user's one timer to last_seen + the gap on each new "
        "event makes it fire only after 10 s of event-time silence, and clearing the ValueState "
        "there forgets the user, so the state holds open sessions only. handleInputRows yields "
        "nothing, so each session comes out once, when it closes."
    ),
    hints=[
        "A session stays open while events keep coming. When can Spark be sure that no event of "
        "it can still come, and how does your processor hear that this moment has come? What must "
        "the state hold to build the session's row then, and what becomes of it afterwards?",
        "lesson 15, `UserSessions.handleInputRows`: read the ValueState (None the first time), "
        "add the rows, write it back, and move the user's one timer to the session's new end "
        "(list, delete, register). lesson 15, `UserSessions.init` keeps the handle for the "
        "timers.",
        "lesson 15, `UserSessions.handleExpiredTimer`: build the row from the state, clear the "
        "state, yield the row. Here handleInputRows sends nothing (an empty iterator). Compare "
        "times with in_utc; a timer is epoch milliseconds: the last event's time + SESSION_GAP.",
    ],
    scenarios=[
        # U2's timer moves from 10:30:12 to 10:30:19 (batch 1); batch 3's watermark (10:30:22)
        # passes it. U1's moves from 10:30:16 to 10:30:24 in batch 2, just before batch 3's
        # watermark would pass the old one. The trailing batch with no data (watermark 10:30:40)
        # closes U1 and U3; U4's session is left open, in state.
        Scenario(
            [
                [
                    shop_event("E1", "U1", "view", "10:30:00"),
                    shop_event("E2", "U2", "cart", "10:30:02"),
                    shop_event("E3", "U1", "view", "10:30:06"),
                ],
                [
                    shop_event("E4", "U2", "view", "10:30:09"),
                    shop_event("E5", "U3", "view", "10:30:20"),
                ],
                [
                    shop_event("E6", "U1", "purchase", "10:30:14"),
                    shop_event("E7", "U3", "cart", "10:30:27"),
                ],
                [shop_event("E8", "U4", "view", "10:30:45")],
            ]
        ),
        # Other users; W3's timer moves in batch 2; batch 3's watermark (11:00:35) closes W1, W2
        # and W3 in a batch with data. W1's view at 11:00:06 comes late, in batch 2, after its
        # 11:00:08 purchase: the session's last_seen stays 11:00:08. W5's session ends at
        # 11:00:51.700 (its event's milliseconds count): batch 5's watermark, 11:00:51.300,
        # closes W4 but not W5. W6's views move the watermark to W5's end's edges, to the
        # millisecond: batch 6's (11:00:51.695) does not close W5, the trailing batch's
        # (11:00:51.705) does; W6 stays open. The session time zone is not UTC: rows bring
        # their times in it, the state in the process's zone (UTC).
        Scenario(
            [
                [
                    shop_event("V1", "W2", "view", "11:00:00"),
                    shop_event("V2", "W1", "cart", "11:00:03"),
                ],
                [
                    shop_event("V3", "W1", "purchase", "11:00:08"),
                    shop_event("V4", "W3", "view", "11:00:10"),
                ],
                [
                    shop_event("V5", "W3", "view", "11:00:16"),
                    shop_event("V6", "W4", "view", "11:00:40"),
                    shop_event("V8", "W1", "view", "11:00:06"),
                ],
                [shop_event("V7", "W5", "view", "11:00:41.700")],
                [shop_event("V9", "W6", "view", "11:00:56.300")],
                [shop_event("V10", "W6", "view", "11:00:56.695")],
                [shop_event("V11", "W6", "view", "11:00:56.705")],
            ],
            hidden=True,
            settings={"spark.sql.session.timeZone": "Asia/Kolkata"},
        ),
    ],
    mistakes=[
        Mistake(
            "processing_time_timer",
            "No session ever closes: the watermark never passes a timer. In timeMode "
            "'EventTime' a timer fires once the watermark passes it, so it must be the "
            "session's last event time + the gap, in epoch milliseconds. Not the wall clock "
            "(timerValues.getCurrentProcessingTimeInMs()), and not a time read in the wrong "
            "zone: rows bring aware times in the session time zone, the state naive ones in "
            "the process's, and a naive time's .timestamp() reads it in the process's zone. "
            "Bring every time to UTC with in_utc before comparing or converting it.",
            when=never_closes,
        ),
        Mistake(
            "state_not_cleared",
            "A closed session stays in state: handleExpiredTimer sends its row but never clears "
            "the ValueState, so the state store keeps every user ever seen, and a user's next "
            "event would continue the old session. Call self.session.clear() there.",
            when=keeps_closed_sessions,
        ),
        Mistake(
            "timer_not_moved",
            "A session closed too early, before the watermark passed its last event + the gap "
            "(or a timer found no session: get() is None). Either the old timer is never "
            "deleted when a new event extends a session: it fires at the old end, and the next "
            "timer then finds no session; delete the user's timers (handle.listTimers(), "
            "handle.deleteTimer(t)) before registering the new one. Or the timer is not the "
            "session's end in epoch MILLISECONDS: a time in seconds is a moment in January "
            "1970, behind any watermark, so it fires at once.",
            error=r"NoneType",
            when=closes_early,
        ),
    ],
)

from pyspark.sql.streaming.state import GroupStateTimeout

from common.schemas import ECOMMERCE_EVENT_SCHEMA
from practice.scenarios import shop_event
from practice.spec import Exercise, Mistake, Scenario


def build_running_totals(events, module):
    """Lesson 12's wiring, with the learner's function and the settings of their file."""
    return (
        events.withWatermark("timestamp", module.WATERMARK_DELAY)
        .groupBy("user_id")
        .applyInPandasWithState(
            module.update_user_totals,
            module.OUTPUT_SCHEMA,
            module.STATE_SCHEMA,
            "update",
            GroupStateTimeout.EventTimeTimeout,
        )
    )


def learner_query(module):
    """Lesson 12's wiring around the learner's function (it runs in Python workers: the check
    reports its errors at the learner's line)."""

    def build(events):
        return build_running_totals(events, module)

    return build


def closed_rows(observation) -> list:
    return [row for batch in observation.batches for row in batch.rows if "closed" in row]


def never_closes(mine, wanted):
    return bool(closed_rows(wanted)) and not closed_rows(mine)


def keeps_closed_users(mine, wanted):
    """A user closed twice, or more users left in state than expected."""
    closed = closed_rows(mine)
    twice = len(closed) > len(set(closed))
    return twice or (mine.state_rows or 0) > (wanted.state_rows or 0)


EXERCISE = Exercise(
    title="Running totals that close",
    kind="build",
    practises="applyInPandasWithState: state per user, an event-time timeout, state removed",
    function="update_user_totals",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    output_mode="update",
    check_state=True,
    query=learner_query,
    why=(
        "applyInPandasWithState calls your function once per user with new rows in the batch, "
        "and once for a user whose timeout has passed; what state.update keeps is stored per "
        "user in the state store between batches. With EventTimeTimeout, setTimeoutTimestamp "
        "asks for a call once the watermark passes that time, so 'idle for 30 s of event time' "
        "is a timeout at last_seen + 30 s. On that call (hasTimedOut, no rows) the final row "
        "goes out and state.remove() forgets the user, so the state holds active users only; "
        "a timeout behind the current watermark is refused, hence the max(...)."
    ),
    hints=[
        "Spark calls your function once per user per batch, with the user's new rows, or with "
        "none when a timeout fires. What must you keep between calls, what do you do on a call "
        "with rows, and what on a timeout? And may a timeout be set earlier than the watermark "
        "your function sees?",
        "lesson 12, `update_user_state` (inside lesson 12, `build_user_state`): read the state "
        "(None the first time), add the rows, update it and set an event-time timeout; on a "
        "timeout, yield the final row and remove the state.",
        "lesson 12, `update_user_state`: the comment above setTimeoutTimestamp says why the "
        "timeout is last_seen + the idle time but never behind the current watermark; and how "
        "last_seen_ms comes from the rows' timestamps, in epoch milliseconds.",
    ],
    scenarios=[
        # U1 buys in batch 0 and is closed in batch 2 (watermark 10:30:40 > 10:30:05 + 30 s).
        # U4's only event (10:30:05) gets in in batch 2 (late rows are filtered with batch 1's
        # watermark, 10:29:55), but 10:30:05 + 30 s is behind batch 2's watermark: a timeout
        # set there must not be earlier than the watermark. U4 is closed by a trailing batch
        # with no data (watermark 10:30:50); U2 (timeout 10:30:50) and U3 are left in state.
        Scenario(
            [
                [
                    shop_event("E1", "U1", "view", "10:30:00"),
                    shop_event("E2", "U1", "purchase", "10:30:05", price=20.0, quantity=2),
                    shop_event("E3", "U2", "view", "10:30:02"),
                ],
                [
                    shop_event("E4", "U2", "purchase", "10:30:20", price=15.0),
                    shop_event("E5", "U3", "view", "10:30:50"),
                ],
                [
                    shop_event("E6", "U3", "view", "10:31:00"),
                    shop_event("E7", "U4", "cart", "10:30:05"),
                ],
            ]
        ),
        # Other users. U8 would time out in batch 3 (10:00:50 < 10:00:55) but has an event in
        # that very batch: it is called with its rows, not timed out. U10 (10:00:16, behind the
        # watermark) and U7 are closed; U10 only in batch 4. U8's view at 10:00:11 in batch 2
        # is late (after its 10:00:20 purchase) but gets in: it counts, and U8's last_seen stays
        # 10:00:20. Batches 4-6 sit on the timeouts' edges, to the millisecond (U9's views move
        # the watermark): U12's timeout is 10:01:25 + 30 s, passed by batch 6's watermark
        # 10:01:55.001 and not by batch 5's 10:01:55. U11's only event (10:01:21) is behind
        # batch 5's watermark, so its timeout is that watermark + 1 ms, 10:01:55.001: passed by
        # the trailing batch's 10:01:55.002, not by batch 6's.
        Scenario(
            [
                [
                    shop_event("V1", "U7", "purchase", "10:00:00", price=5.0, quantity=3),
                    shop_event("V2", "U8", "view", "10:00:01"),
                ],
                [
                    shop_event("V3", "U8", "purchase", "10:00:20", price=100.0),
                    shop_event("V4", "U7", "cart", "10:00:12"),
                ],
                [
                    shop_event("V5", "U9", "view", "10:01:05"),
                    shop_event("V6", "U7", "view", "10:00:15"),
                    shop_event("V10", "U8", "view", "10:00:11"),
                ],
                [
                    shop_event("V7", "U8", "view", "10:00:50"),
                    shop_event("V8", "U10", "purchase", "10:00:16", price=7.257, quantity=2),
                    shop_event("V9", "U9", "view", "10:01:30"),
                ],
                [
                    shop_event("V11", "U9", "view", "10:02:05"),
                    shop_event("V12", "U12", "cart", "10:01:25"),
                ],
                [
                    shop_event("V13", "U11", "view", "10:01:21"),
                    shop_event("V14", "U9", "view", "10:02:05.001"),
                ],
                [shop_event("V15", "U9", "view", "10:02:05.002")],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "timeout_behind_watermark",
            "The timeout is behind the current watermark, and Spark refuses it "
            "(INVALID_TIMEOUT_TIMESTAMP). Late rows are filtered with the previous batch's "
            "watermark, so a row that got in can be older than state.getCurrentWatermarkMs(): "
            "set max(last_seen_ms + IDLE_TIMEOUT_MS, state.getCurrentWatermarkMs() + 1).",
            error=r"INVALID_TIMEOUT_TIMESTAMP",
        ),
        Mistake(
            "no_timeout",
            "No user is ever closed: without state.setTimeoutTimestamp(...) Spark never calls "
            "the function for an idle user, and every user stays in state for ever. Set the "
            "timeout after each update.",
            when=never_closes,
        ),
        Mistake(
            "state_not_removed",
            "A closed user's state is not removed: more users are left in state than expected, "
            "or a user is closed twice. A state left as it is on the timeout keeps its old "
            "timeout, so Spark calls the user again (another 'closed' row); a state updated "
            "there (to zeros, say) gets no timeout and is never called again, but stays in the "
            "state store for ever. Call state.remove() before yielding the 'closed' row.",
            when=keeps_closed_users,
        ),
    ],
)

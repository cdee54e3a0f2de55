from common.schemas import CLICK_SCHEMA, IMPRESSION_SCHEMA
from practice.scenarios import click, impression
from practice.spec import Exercise, Mistake, Scenario


def has_unmatched(observation):
    """Some impression came out with null click columns."""
    if "click_id" not in observation.columns:
        return False
    index = observation.columns.index("click_id")
    return any(row[index] is None for batch in observation.batches for row in batch.rows)


def never_emits_unmatched(mine, wanted):
    """The symptom of the query as given: no impression ever comes out without a click."""
    return has_unmatched(wanted) and not has_unmatched(mine)


EXERCISE = Exercise(
    title="Missing unmatched rows",
    kind="fix",
    practises="a left outer stream-stream join with a watermark on the clicks only is accepted "
    "but never emits (nor forgets) an unmatched impression: that takes a watermark on the "
    "impressions too",
    function="build_ad_join",
    schemas={"impressions": IMPRESSION_SCHEMA, "clicks": CLICK_SCHEMA},
    output_mode="append",
    check_state=True,  # the query as given keeps every row in the join's state
    mirrors="09_stream_joins:build_ad_join",
    why=(
        "Spark accepts a left outer stream-stream join once the nullable side (the clicks) has "
        "a watermark and the condition a time bound, but it removes a left row from the join's "
        "state, and only then emits it with nulls, through a watermark on the left input "
        "itself. With withWatermark on impression_time, once the join's watermark (the smaller "
        "of the two) has passed impression_time + 10 minutes, an unmatched impression comes "
        "out with nulls and leaves the state. The matched rows do not change: they never "
        "waited for a watermark."
    ),
    hints=[
        "An impression without a click comes out only when Spark drops it from the join's state. "
        "Which of the two streams has a watermark in this query, and whose rows would Spark have "
        "to drop to emit an impression with nulls?",
        "lesson 09, `build_ad_join`: read the comment above its watermarks: the one Spark "
        "requires to accept a left outer join, and the one it needs to ever drop, and emit, an "
        "impression. lesson 09, `build_join_kinds` runs this query ('one watermark') beside the "
        "right one.",
        "lesson 09, `build_ad_join` sets the missing watermark on the impressions' event-time "
        "column, with IMPRESSION_WATERMARK, and keeps the clicks' one. withWatermark returns a "
        "new DataFrame: the join must use what it returns.",
    ],
    scenarios=[
        # A1 and A3 get no click. With both watermarks, the trailing empty micro-batch runs
        # with 12:23 (the smaller of 12:23 and 12:24) and emits them with nulls; the query as
        # given never does, and keeps every row in its state.
        Scenario(
            {
                "impressions": [
                    [
                        impression("A1", "AD-3", "U7", "12:00:00"),
                        impression("A2", "AD-4", "U8", "12:02:00"),
                        impression("A3", "AD-3", "U9", "12:04:00"),
                    ],
                    [impression("A4", "AD-4", "U7", "12:25:00")],
                ],
                "clicks": [
                    [click("B2", "A2", "AD-4", "U8", "12:05:00")],
                    [click("B4", "A4", "AD-4", "U7", "12:26:00")],
                ],
            }
        ),
        # Other ids and order; Q2 has no click, and R9 is a click on an impression that never
        # came. The bounds are inclusive: R4 comes at Q4's very time, R5 exactly 10 minutes
        # after Q5; R6, 10.5 minutes after Q6, is out of bounds, so Q6 comes out with nulls.
        # Q7 (14:00) takes the impressions' watermark to 13:58, past the clicks' (13:45 - 2
        # minutes): the clicks' watermark is then the smaller, the join's, 13:43 in the last
        # batch (13:44 with a 1-minute delay, 13:42 with 3).
        Scenario(
            {
                "impressions": [
                    [
                        impression("Q2", "AD-9", "USER-2", "13:11:00"),
                        impression("Q1", "AD-8", "USER-1", "13:10:00"),
                        impression("Q4", "AD-9", "USER-4", "13:12:00"),
                        impression("Q5", "AD-9", "USER-5", "13:13:00"),
                        impression("Q6", "AD-8", "USER-6", "13:14:00"),
                    ],
                    [
                        impression("Q3", "AD-8", "USER-3", "13:30:00"),
                        impression("Q7", "AD-9", "USER-7", "14:00:00"),
                    ],
                ],
                "clicks": [
                    [
                        click("R1", "Q1", "AD-8", "USER-1", "13:12:00"),
                        click("R4", "Q4", "AD-9", "USER-4", "13:12:00"),
                        click("R6", "Q6", "AD-8", "USER-6", "13:24:30"),
                        click("R5", "Q5", "AD-9", "USER-5", "13:23:00"),
                    ],
                    [
                        click("R9", "Q9", "AD-9", "USER-9", "13:45:00"),
                        click("R3", "Q3", "AD-8", "USER-3", "13:31:00"),
                    ],
                ],
            },
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "watermark_moved",
            "Spark refuses the left outer join: to know when no click can still come for an "
            "impression, it needs a watermark on the nullable side (the clicks) AND a bound on "
            "how long after its impression a click may come (click_time <= impression_time + "
            "the window). One of the two is missing: did the clicks' watermark go (moved to the "
            "impressions?), or the upper end of the time bound? Keep both, and give the "
            "impressions a watermark too.",
            error=r"LeftOuter join .*not supported without a watermark",
        ),
        Mistake(
            "clicks_watermark_only",
            "No impression ever came out without a click: as in the query given, only the clicks "
            "have a watermark in the query Spark runs. That is enough for Spark to accept the "
            "join, but it drops an impression from the join's state (and, without a click, "
            "emits it with nulls) only if the impressions have a watermark of their own: "
            "without one, no impression ever leaves. If you did add one, check that the join "
            "uses its result: withWatermark returns a new DataFrame and leaves the one it is "
            "called on as it was (impressions = impressions.withWatermark(...)).",
            when=never_emits_unmatched,
        ),
    ],
)

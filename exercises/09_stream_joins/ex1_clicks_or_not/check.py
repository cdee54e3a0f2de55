from common.schemas import CLICK_SCHEMA, IMPRESSION_SCHEMA
from practice.scenarios import click, impression
from practice.spec import Exercise, Mistake, Scenario


def rows_of(observation):
    """Every row of every micro-batch, as {column: value}."""
    return [
        dict(zip(observation.columns, row, strict=True))
        for batch in observation.batches
        for row in batch.rows
    ]


def has_unmatched(observation):
    """Some impression came out with null click columns."""
    return any(row.get("click_id", "") is None for row in rows_of(observation))


def watermarks(observation):
    return [batch.watermark for batch in observation.batches]


def one_watermark(mine, wanted):
    """Other watermarks than expected and no unmatched impression: only the clicks have one."""
    return watermarks(mine) != watermarks(wanted) and not has_unmatched(mine)


def inner_join(mine, wanted):
    """The same watermarks, but no impression ever comes out without a click."""
    return has_unmatched(wanted) and not has_unmatched(mine)


def click_before_impression(mine, wanted):
    """A click before its impression was matched: the time bound has no lower end."""
    return any(
        row.get("click_time") is not None and row["click_time"] < row["impression_time"]
        for row in rows_of(mine)
    )


EXERCISE = Exercise(
    title="Clicks or not",
    kind="build",
    practises="a left outer stream-stream join: the clicks' watermark and a time bound let Spark "
    "accept it; the impressions' own watermark lets it emit each unmatched impression with "
    "nulls, once the join's watermark has passed its bound",
    function="build_ad_join",
    schemas={"impressions": IMPRESSION_SCHEMA, "clicks": CLICK_SCHEMA},
    output_mode="append",
    mirrors="09_stream_joins:build_ad_join",
    why=(
        "A left outer join must at some point say 'no click came', and on a stream it can say "
        "so only once no click can still arrive. The time bound in the condition and the "
        "clicks' watermark let Spark accept the join: it can work out how long an impression "
        "must wait. The impressions' own watermark lets it evict an impression from the join's "
        "state: once the join's watermark (the smaller of the two streams') has passed "
        "impression_time + 10 minutes, the impression comes out with nulls, once. A matched "
        "impression does not wait: it comes out in the batch its click arrives."
    ),
    hints=[
        "A left outer join must, at some point, emit an impression that got no click. When can "
        "Spark be sure that no more clicks will come for an impression? What must it know about "
        "each stream, and about the join condition, to work that out?",
        "lesson 09, `build_ad_join`: look at where each side gets its watermark, and read the "
        "comment above them: which watermark Spark requires to accept a left outer join, and "
        "which one it needs to ever drop an impression and emit it with nulls.",
        "lesson 09, `build_ad_join`: the time bound has two ends (a click from impression_time to "
        "impression_time + CLICK_WINDOW_MINUTES, both included), and the clicks' impression_id is "
        "renamed before the join so the two ids can be compared. Join 'left_outer', then select "
        "the six columns.",
    ],
    scenarios=[
        # I1 is clicked at once. C2 comes before its impression and C3 15 minutes after its
        # one: neither counts, so I2 and I3 get no click. I4 and C4 move the streams'
        # watermarks to 10:28 and 10:29; the last, empty micro-batch runs with the smaller one
        # and emits I2 and I3 (their bounds end at 10:11 and 10:15) with nulls.
        Scenario(
            {
                "impressions": [
                    [
                        impression("I1", "AD-1", "U1", "10:00:00"),
                        impression("I2", "AD-2", "U2", "10:01:00"),
                        impression("I3", "AD-1", "U3", "10:05:00"),
                    ],
                    [impression("I4", "AD-1", "U4", "10:30:00")],
                ],
                "clicks": [
                    [
                        click("C1", "I1", "AD-1", "U1", "10:03:00"),
                        click("C2", "I2", "AD-2", "U2", "10:00:30"),
                    ],
                    [
                        click("C3", "I3", "AD-1", "U3", "10:20:00"),
                        click("C4", "I4", "AD-1", "U4", "10:31:00"),
                    ],
                ],
            }
        ),
        # Other ids. K2 arrives a batch BEFORE its impression X2 (it waits in the join's
        # state); K1 comes 9 minutes after X1, within the bound; X3 never gets a click.
        # The edges: K6 comes at X6's very time and K9 exactly 10 minutes after X8 (both
        # bounds are inclusive); K8, 10.5 minutes after X8, arrives first but is out of bounds;
        # X6 and X7 are one user's views of one ad, and K7 (on X7) is within X6's bound too:
        # only the impression id tells them apart.
        Scenario(
            {
                "impressions": [
                    [
                        impression("X1", "AD-7", "USER-4", "11:00:00"),
                        impression("X6", "AD-9", "USER-7", "10:50:00"),
                        impression("X7", "AD-9", "USER-7", "10:51:00"),
                        impression("X8", "AD-9", "USER-8", "10:52:00"),
                    ],
                    [
                        impression("X3", "AD-8", "USER-6", "11:03:00"),
                        impression("X2", "AD-7", "USER-5", "11:02:00"),
                        impression("X5", "AD-8", "USER-4", "11:40:00"),
                    ],
                ],
                "clicks": [
                    [
                        click("K2", "X2", "AD-7", "USER-5", "11:04:00"),
                        click("K8", "X8", "AD-9", "USER-8", "11:02:30"),
                        click("K6", "X6", "AD-9", "USER-7", "10:50:00"),
                        click("K7", "X7", "AD-9", "USER-7", "10:52:00"),
                    ],
                    [
                        click("K5", "X5", "AD-8", "USER-4", "11:41:00"),
                        click("K1", "X1", "AD-7", "USER-4", "11:09:00"),
                        click("K9", "X8", "AD-9", "USER-8", "11:02:00"),
                    ],
                ],
            },
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "no_time_bound",
            "Spark refuses the left outer join: it must know when an impression can no longer "
            "get a click. That takes a watermark on the clicks (the side that may be null) AND a "
            "time bound on event time in the join condition (click_time between impression_time "
            "and impression_time + CLICK_WINDOW_MINUTES).",
            error=r"LeftOuter join .*not supported without a watermark",
        ),
        Mistake(
            "one_watermark",
            "It looks as if only the clicks have a watermark: Spark accepts and runs that join "
            "(the clicks' watermark and the time bound are all it requires), but it drops an "
            "impression from the join's state, and emits it with nulls, only if the impressions "
            "have a watermark of their own. Without one, no impression ever comes out without a "
            "click, and the join's state grows forever. Give the impressions one too.",
            when=one_watermark,
        ),
        Mistake(
            "inner_join",
            "An inner join: only the impressions that got a click come out. Join with "
            "'left_outer' to keep the others, which come out with null click columns once the "
            "join's watermark has passed their time bound.",
            when=inner_join,
        ),
        Mistake(
            "no_lower_bound",
            "A click that came BEFORE its impression was matched: the time bound needs both "
            "ends, click_time >= impression_time and click_time <= impression_time + the "
            "interval.",
            when=click_before_impression,
        ),
    ],
)

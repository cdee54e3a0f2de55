from common.schemas import SENSOR_SCHEMA
from practice.scenarios import reading, seconds
from practice.spec import Exercise, Mistake, Scenario


def watermark_lag(mine, wanted) -> float | None:
    """How many seconds the learner's watermarks trail the expected ones, if by the same
    amount in every batch where both have one; None otherwise."""
    lags = {
        round(seconds(my_batch.watermark) - seconds(want_batch.watermark), 3)
        for my_batch, want_batch in zip(mine.batches, wanted.batches, strict=False)
        if my_batch.watermark and want_batch.watermark
    }
    return lags.pop() if len(lags) == 1 else None


def keeps_more_state(mine, wanted) -> bool:
    return mine.state_rows is not None and mine.state_rows > (wanted.state_rows or 0)


def waits_too_long(mine, wanted):
    """More state left, and a watermark that trails the expected one by a fixed delay."""
    lag = watermark_lag(mine, wanted)
    return keeps_more_state(mine, wanted) and lag is not None and lag < 0


def watermark_elsewhere(mine, wanted):
    """A watermark that does not follow the readings' event times, and no state removed."""
    has_watermark = any(batch.watermark for batch in mine.batches)
    return keeps_more_state(mine, wanted) and has_watermark and watermark_lag(mine, wanted) is None


EXERCISE = Exercise(
    title="State that grows forever",
    kind="fix",
    practises="a watermark lets a windowed aggregation remove the windows it has passed",
    function="build_sensor_windows",
    schemas=SENSOR_SCHEMA,
    output_mode="update",
    check_state=True,
    why=(
        "Without a watermark a reading for any window may still come, so Spark must keep "
        "every window's row in the state store for ever. A watermark on the column the windows "
        "are computed from (latest event time - 10 s) tells the aggregation when a window can "
        "no longer change: once it reaches the window's end, the window leaves the state, in "
        "update mode too. No reading is later than the lateness the input promises, so nothing "
        "is dropped and each batch sends what it sent before: only the state stops growing."
    ),
    hints=[
        "Why must this query keep every window it has ever opened? What would have to tell Spark "
        "that no reading can still come for a window?",
        "lesson 07, `start_state_probes`: the same windowed count without and with a watermark; "
        "the docstring's state table shows which one stops growing.",
        "lesson 07, `build_window_counts`: the watermark goes on the event-time column, before "
        "the groupBy; here its delay is MAX_LATENESS, the lateness the input promises. The rows "
        "each batch sends stay the same.",
    ],
    scenarios=[
        # Three batches, two sensors, one new window each 10 s; r5 (10:30:08) arrives with
        # 10:30:13, 5 s late, and still counts. Without a watermark all 6 windows stay in the
        # state; with one, the last batch (no input: the watermark moved to 10:30:14) removes
        # the two that ended at 10:30:10, leaving 4.
        Scenario(
            [
                [
                    reading(1, "SENSOR-0", "10:30:02", 20.0),
                    reading(2, "SENSOR-1", "10:30:06", 19.0),
                ],
                [
                    reading(3, "SENSOR-0", "10:30:13", 21.0),
                    reading(4, "SENSOR-1", "10:30:11", 19.5),
                    reading(5, "SENSOR-0", "10:30:08", 22.0),
                ],
                [
                    reading(6, "SENSOR-0", "10:30:24", 23.0),
                    reading(7, "SENSOR-1", "10:30:22", 20.0),
                ],
            ]
        ),
        # Other sensors, readings up to 8 s behind the latest: 6 windows without a watermark,
        # 2 left with one (the last batch runs with 11:00:26).
        Scenario(
            [
                [reading(21, "S-A", "11:00:03", 18.0), reading(22, "S-B", "11:00:17", 25.0)],
                [reading(23, "S-B", "11:00:09", 24.0), reading(24, "S-A", "11:00:21", 19.0)],
                [reading(25, "S-A", "11:00:14", 20.123), reading(26, "S-B", "11:00:36", 22.0)],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "delay_too_long",
            "The watermark's delay is far longer than the lateness the input promises "
            "(MAX_LATENESS, 10 seconds): the watermark never passes the old windows' ends, so "
            "nothing leaves the state.",
            when=waits_too_long,
        ),
        Mistake(
            "watermark_not_on_event_time",
            "The watermark is not on the event-time column the windows are computed from (e.g. "
            "on an arrival time from current_timestamp(), or set after the aggregation): Spark "
            "cannot tell when a window of event_time is final, so it keeps them all. Put "
            "withWatermark('event_time', ...) before the groupBy.",
            when=watermark_elsewhere,
        ),
    ],
)

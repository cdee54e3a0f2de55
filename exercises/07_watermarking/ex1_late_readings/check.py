from common.schemas import SENSOR_SCHEMA
from practice.scenarios import reading, seconds
from practice.spec import Exercise, Mistake, Scenario


def watermark_lag(mine, wanted) -> int | None:
    """How many seconds the learner's watermarks trail the expected ones, if by the same
    amount in every batch where both have one; None otherwise."""
    lags = {
        seconds(my_batch.watermark) - seconds(want_batch.watermark)
        for my_batch, want_batch in zip(mine.batches, wanted.batches, strict=False)
        if my_batch.watermark and want_batch.watermark
    }
    return lags.pop() if len(lags) == 1 else None


def waits_too_long(mine, wanted):
    """Fewer rows dropped, and a watermark that trails the expected one by a fixed delay."""
    lag = watermark_lag(mine, wanted)
    dropped = sum(batch.dropped for batch in mine.batches)
    return lag is not None and lag < 0 and dropped < sum(batch.dropped for batch in wanted.batches)


EXERCISE = Exercise(
    title="Late readings left out",
    kind="build",
    practises="withWatermark before a windowed count: append sends final windows, drops late rows",
    function="build_sensor_counts",
    schemas=SENSOR_SCHEMA,
    output_mode="append",
    check_dropped=True,
    # 07_watermarking:build_window_counts counts all sensors together and waits 10 s.
    mirrors="",
    why=(
        "withWatermark on the event-time column, before the groupBy, gives the aggregation a "
        "clock that only moves forward: after each micro-batch, the latest event time seen "
        "minus 5 s. In append mode a window is sent once that watermark reaches its end, and "
        "then leaves the state; a reading for a window the previous batch's watermark had "
        "already reached is dropped (numRowsDroppedByWatermark) rather than reopening it. A "
        "reading older than the watermark still counts while its window is open: lateness is "
        "judged by the window's end, not the row's time."
    ),
    hints=[
        "How far behind the latest event may a reading be and still count, and when is a window "
        "final, so that append mode can send it? Where in the query must Spark learn about that "
        "delay: before or after the grouping?",
        "lesson 07, `build_window_counts`: the watermark on the event-time column, set before the "
        "groupBy with the window.",
        "Group by a tumbling window of WINDOW_SIZE and the sensor, count the readings, then turn "
        "the window into window_start and window_end: lesson 06, `to_window_rows` shows that "
        "select.",
    ],
    scenarios=[
        # Batch 1 runs with the watermark 10:30:12 (10:30:17 - 5 s) and closes
        # [10:30:00, 10:30:10), r4 (10:30:09) included: a batch drops rows by the previous
        # batch's watermark, and batch 0 had none. r6 (10:30:07) comes in batch 2, after its
        # window was sent: dropped. r7 (10:30:11) is behind that watermark too, but its window
        # [10:30:10, 10:30:20) is still open: it counts. The last batch has no input: the
        # watermark moved to 10:30:26 and closes [10:30:10, 10:30:20).
        Scenario(
            [
                [
                    reading(1, "SENSOR-0", "10:30:02"),
                    reading(2, "SENSOR-1", "10:30:04"),
                    reading(3, "SENSOR-0", "10:30:17"),
                ],
                [reading(4, "SENSOR-1", "10:30:09"), reading(5, "SENSOR-0", "10:30:23")],
                [
                    reading(6, "SENSOR-0", "10:30:07"),
                    reading(7, "SENSOR-1", "10:30:11"),
                    reading(8, "SENSOR-1", "10:30:31"),
                ],
            ]
        ),
        # Other sensors and times: r25 (11:00:03) is dropped in batch 2, r26 (11:00:12) counts;
        # the last batch (watermark 11:00:30) closes [11:00:10, 11:00:20) and
        # [11:00:20, 11:00:30).
        Scenario(
            [
                [reading(21, "S-B", "11:00:05"), reading(22, "S-A", "11:00:16")],
                [reading(23, "S-A", "11:00:08"), reading(24, "S-B", "11:00:24")],
                [
                    reading(25, "S-B", "11:00:03"),
                    reading(26, "S-A", "11:00:12"),
                    reading(27, "S-B", "11:00:35"),
                ],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "watermark_after_aggregation",
            "The aggregation has no watermark before it (none at all, or withWatermark set after "
            "the groupBy, on its result): append mode must know when a window is final, so Spark "
            "refuses it. Call readings.withWatermark('event_time', WATERMARK_DELAY) first, then "
            "groupBy.",
            error=r"STREAMING_OUTPUT_MODE.{0,80}append.{0,200}without watermark"
            r"|Append output mode not supported",
        ),
        Mistake(
            "delay_too_long",
            "The watermark's delay is too long: it trails the latest event time by more than "
            "WATERMARK_DELAY (5 seconds), so windows close later and a reading that should be "
            "dropped as too late is still counted.",
            when=waits_too_long,
        ),
    ],
)

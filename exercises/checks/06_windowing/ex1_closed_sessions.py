from common.schemas import SENSOR_SCHEMA
from practice.scenarios import reading
from practice.spec import Exercise, Mistake, Scenario


def never_emits(mine, wanted):
    return not any(batch.rows for batch in mine.batches)


EXERCISE = Exercise(
    title="Sessions that close",
    kind="build",
    practises="session_window with a watermark in append mode: each session sent once, final",
    function="build_closed_sessions",
    schemas=SENSOR_SCHEMA,
    output_mode="append",
    mirrors="",
    hints=[
        "A session window grows while events keep coming less than the gap apart. Append mode "
        "sends a row only when it can no longer change, and only a watermark tells Spark that: "
        "once the watermark (latest event time - delay) reaches a session's end, that session "
        "is final. A reading is not dropped just for being older than the watermark: only when "
        "its own time plus the gap is at or before the previous batch's watermark (lesson 07).",
        "readings.withWatermark('event_time', WATERMARK_DELAY) before "
        ".groupBy(F.session_window('event_time', SESSION_GAP), 'sensor_id'), then "
        ".agg(F.count('*').alias('readings')).",
        "Select F.col('session_window.start').alias('session_start'), the same for the end, "
        "then 'sensor_id' and 'readings'.",
    ],
    scenarios=[
        # r1 and r3 (4 s apart) are one session, r4 another; r5 joins SENSOR-1's session a
        # batch later; r6 moves the watermark past the three.
        Scenario(
            [
                [
                    reading(1, "SENSOR-0", "10:30:02"),
                    reading(2, "SENSOR-1", "10:30:05"),
                    reading(3, "SENSOR-0", "10:30:06"),
                ],
                [reading(4, "SENSOR-0", "10:30:20"), reading(5, "SENSOR-1", "10:30:08")],
                [reading(6, "SENSOR-1", "10:30:40")],
            ]
        ),
        # Other sensors: S-A's session grows over two batches, r13's time closes it and r16's
        # S-B's; r17 has no temperature (still a reading) and was taken before r13: it arrives
        # a batch later and moves S-B's session start back to 11:00:28.
        Scenario(
            [
                [reading(11, "S-A", "11:00:00"), reading(12, "S-A", "11:00:04")],
                [reading(13, "S-B", "11:00:30"), reading(14, "S-A", "11:00:07")],
                [
                    reading(15, "S-B", "11:00:33"),
                    reading(16, "S-A", "11:00:59"),
                    reading(17, "S-B", "11:00:28", temperature=None),
                ],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "no_watermark",
            "No watermark: in append mode Spark cannot tell when a session is final, so it "
            "refuses the query. Put withWatermark('event_time', WATERMARK_DELAY) before the "
            "groupBy.",
            error=r"Append output mode not supported|watermark",
        ),
        Mistake(
            "gap_too_long",
            "The session gap decides where a session ends: 5 seconds here (SESSION_GAP), not the "
            "watermark's delay. With a longer gap, sessions merge that should not.",
            source=r"session_window\([^)]*\"10 seconds\"",
        ),
    ],
)

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
    why=(
        "A session window has no fixed size: it runs from a sensor's first reading to its last "
        "reading + the gap, and a reading within the gap extends it, so a session can change "
        "until the stream is past its end. Append mode sends a row only once it can no longer "
        "change, and only a watermark can tell: once the watermark (latest event time - 10 s) "
        "reaches a session's end, the session is sent, once, and leaves the state. Without "
        "withWatermark before the groupBy, Spark refuses the aggregation in append mode."
    ),
    hints=[
        "When can a sensor's session no longer grow or merge with another one, and what tells "
        "Spark that this moment has come? Without it, could append mode ever send a session?",
        "lesson 06, `build_closed_sessions`: see where the watermark is set, before lesson 06, "
        "`build_sessions` groups by a session window and the sensor.",
        "lesson 06, `to_window_rows`: the session window's start and end become columns with "
        "select and alias. Here the only measure is readings, a count of every reading (one "
        "without a temperature too): columns session_start, session_end, sensor_id, readings.",
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

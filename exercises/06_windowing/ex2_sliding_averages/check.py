import re
from collections import Counter

from common.schemas import SENSOR_SCHEMA
from practice.scenarios import reading, seconds
from practice.spec import Exercise, Mistake, Scenario

# A time on the scenarios' day shows as 'HH:MM:SS'; any other day (the clock's) with its date.
DATED = re.compile(r"^\d{4}-\d\d-\d\d ")


def windows_on_the_clock(mine, wanted):
    """The windows are on another day than the readings': they come from the clock."""
    return any(
        isinstance(value, str) and DATED.match(value)
        for batch in mine.batches
        for row in batch.rows
        for value in row[:2]
    )


def only_ends_differ(mine, wanted):
    """Every batch's rows are right but for window_end: the windows are sliding ones, their
    end is computed wrong (not tumbling windows, which count other readings)."""
    if mine.columns != wanted.columns or len(mine.batches) != len(wanted.batches):
        return False
    return all(
        Counter(row[:1] + row[2:] for row in got.rows)
        == Counter(row[:1] + row[2:] for row in want.rows)
        for got, want in zip(mine.batches, wanted.batches, strict=True)
    )


def windows_never_overlap(mine, wanted):
    """No two windows of one sensor overlap: tumbling windows, where sliding ones were wanted."""
    if only_ends_differ(mine, wanted):
        return False
    windows = {}
    for batch in mine.batches:
        for row in batch.rows:
            if len(row) < 3 or DATED.match(str(row[0])) or DATED.match(str(row[1])):
                return False
            windows.setdefault(row[2], set()).add((seconds(row[0]), seconds(row[1])))
    for spans in windows.values():
        for start, end in spans:
            if any(start < other_start < end for other_start, _ in spans):
                return False
    return bool(windows)


EXERCISE = Exercise(
    title="Sliding averages per sensor",
    kind="build",
    practises="sliding windows on event time (window with a size and a slide) in update mode",
    function="build_sliding_averages",
    schemas=SENSOR_SCHEMA,
    output_mode="update",
    # 06_windowing:build_sliding_windows groups by its *keys and adds reading_ids: not the same.
    mirrors="",
    why=(
        "window(event_time, size, slide) puts each reading in every window that holds its "
        "event time: size / slide = 2 overlapping windows here, so one reading updates two "
        "rows. The window comes from the time written in the reading, not from when it "
        "arrives, so a late reading still lands in its own windows, and update mode sends each "
        "window the batch changed with its totals so far. count('*') counts rows while avg "
        "skips nulls: a reading without a temperature counts in readings, not in avg_temp."
    ),
    hints=[
        "A window of 20 s that starts every 10 s: how many windows does one reading fall in, and "
        "which time decides them, when it was taken or when it arrived? What should an average do "
        "with a reading that has no temperature?",
        "lesson 06, `build_sliding_windows`: window() with a third argument, the slide, grouped "
        "together with the sensor.",
        "lesson 06, `to_window_rows`: the measures, then the window's start and end as columns. "
        "Here two measures: readings (count every reading) and avg_temp (the average skips nulls, "
        "rounded to 2 places); columns window_start, window_end, sensor_id, readings, avg_temp.",
    ],
    scenarios=[
        # Two sensors, each reading in two overlapping windows; a late reading, a boundary.
        Scenario(
            [
                [
                    reading(1, "SENSOR-0", "10:30:02", 20.0),
                    reading(2, "SENSOR-1", "10:30:05", 19.0),
                    reading(3, "SENSOR-0", "10:30:13", 21.0),
                ],
                # r5 was taken at 10:30:08, long before r4, but arrives with it: it updates
                # SENSOR-1's two windows of batch 0, not new ones.
                [
                    reading(4, "SENSOR-0", "10:30:24", 23.0),
                    reading(5, "SENSOR-1", "10:30:08", 21.0),
                ],
                # r7 at 10:30:10 is exactly on a boundary: it is in [10:30:00, 10:30:20) and
                # [10:30:10, 10:30:30), not in [10:29:50, 10:30:10).
                [
                    reading(6, "SENSOR-1", "10:30:31", 20.0),
                    reading(7, "SENSOR-0", "10:30:10", 22.0),
                ],
            ]
        ),
        # S-C's two windows average 20.125 after batch 1: rounded half up, 20.13. r29 has no
        # temperature: it counts in readings, not in the average.
        Scenario(
            [
                [
                    reading(21, "S-B", "11:00:15", 18.0),
                    reading(22, "S-A", "11:00:01", 25.0),
                    reading(27, "S-C", "11:00:03", 20.25),
                ],
                # r24 on a boundary (11:00:20).
                [
                    reading(23, "S-A", "11:00:09", 24.0),
                    reading(24, "S-B", "11:00:20", 19.0),
                    reading(28, "S-C", "11:00:05", 20.0),
                ],
                # r26 was taken in the minute before: windows [10:59:40, 11:00:00) and
                # [10:59:50, 11:00:10).
                [
                    reading(25, "S-A", "11:00:12", 23.5),
                    reading(26, "S-B", "10:59:58", 17.0),
                    reading(29, "S-C", "11:00:06", temperature=None),
                ],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "size_and_slide_swapped",
            "The size and the slide are swapped: window(event_time, size, slide) takes the "
            "window's length first (SLIDING_SIZE, 20 s), then how often a new one starts "
            "(SLIDING_STEP, 10 s). A slide longer than the window would skip readings, so Spark "
            "refuses it.",
            error=r"slide_duration.{0,40}must be <=",
        ),
        Mistake(
            "processing_time",
            "The windows are on processing time (when Spark ran the batch, e.g. "
            "current_timestamp()), not on event time: a reading must count in the windows of "
            "the time it was taken, its event_time column, however late it arrives.",
            when=windows_on_the_clock,
        ),
        Mistake(
            "tumbling",
            "These are tumbling windows: window() with one duration gives windows that never "
            "overlap. A sliding window needs the slide as a third argument: "
            "F.window('event_time', SLIDING_SIZE, SLIDING_STEP).",
            when=windows_never_overlap,
        ),
    ],
)

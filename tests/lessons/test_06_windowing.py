"""Lesson 06: tumbling, sliding and session windows on event time, row by row on the lesson's
own scenario; session windows refuse update mode and, with a watermark, append each session
once; a malformed live line is quarantined with its reason, not counted as a window."""

from __future__ import annotations

import re

import pytest

from common.parsing import quarantined
from conftest import at, load_lesson, run_script, sensor_reading
from infra.files import json_lines, write_atomically
from teaching import demos
from teaching.microbatch import collect_batches

lesson = load_lesson("06_windowing")


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    """The lesson's scenario, replayed once through its four outputs."""
    return lesson.start_scenario(spark, tmp_path_factory.mktemp("scenario"))


def rows(run) -> list[list[tuple]]:
    return [[tuple(row) for row in batch.rows] for batch in run.batches]


def test_tumbling_windows_use_event_time_and_start_inclusive(runs):
    assert rows(runs["tumbling"]) == [
        [
            (at("10:30:00"), at("10:30:10"), 3, 20.0, [1, 2, 3]),
            (at("10:30:10"), at("10:30:20"), 3, 21.33, [4, 5, 6]),
        ],  # r4 at exactly 10:30:10 opens the next window
        [
            (
                at("10:30:00"),
                at("10:30:10"),
                5,
                20.0,
                [1, 2, 3, 8, 9],
            ),  # r8, r9 arrived last but happened first
            (at("10:30:20"), at("10:30:30"), 1, 23.0, [7]),
        ],
        [(at("10:30:20"), at("10:30:30"), 2, 21.5, [7, 10])],
        [(at("10:30:40"), at("10:30:50"), 1, 22.0, [11])],
    ]


def test_sliding_windows_hold_every_reading_twice(runs):
    assert rows(runs["sliding"])[:2] == [
        [
            (at("10:29:50"), at("10:30:10"), 3, 20.0, [1, 2, 3]),
            (at("10:30:00"), at("10:30:20"), 6, 20.67, [1, 2, 3, 4, 5, 6]),
            (at("10:30:10"), at("10:30:30"), 3, 21.33, [4, 5, 6]),
        ],
        [
            (at("10:29:50"), at("10:30:10"), 5, 20.0, [1, 2, 3, 8, 9]),
            (at("10:30:00"), at("10:30:20"), 8, 20.5, [1, 2, 3, 4, 5, 6, 8, 9]),
            (at("10:30:10"), at("10:30:30"), 4, 21.75, [4, 5, 6, 7]),
            (at("10:30:20"), at("10:30:40"), 1, 23.0, [7]),
        ],
    ]
    final = {}  # update mode: the last version of each window
    for batch in runs["sliding"].batches:
        final.update({row.window_start: row.reading_ids for row in batch.rows})
    assert (
        sorted(sum(reading in ids for ids in final.values()) for reading in range(1, 12))
        == [2] * 11
    )


def test_sessions_grow_per_sensor_and_merge_when_a_gap_is_filled(runs):
    first_sessions = [
        (at("10:30:02"), at("10:30:15"), "SENSOR-0", 3, 21.0, [1, 3, 4]),
        (at("10:30:03"), at("10:30:17"), "SENSOR-1", 4, 19.63, [2, 5, 8, 9]),  # r9 bridged the gap
        (at("10:30:19"), at("10:30:26"), "SENSOR-0", 2, 22.75, [6, 7]),
    ]
    later = [
        (at("10:30:27"), at("10:30:32"), "SENSOR-1", 1, 20.0, [10]),
        (at("10:30:40"), at("10:30:45"), "SENSOR-0", 1, 22.0, [11]),
    ]

    # Complete mode: every session, every batch.
    assert rows(runs["sessions"]) == [
        [
            (at("10:30:02"), at("10:30:15"), "SENSOR-0", 3, 21.0, [1, 3, 4]),
            (at("10:30:05"), at("10:30:10"), "SENSOR-1", 1, 19.0, [2]),
            (at("10:30:12"), at("10:30:17"), "SENSOR-1", 1, 19.5, [5]),
            (at("10:30:19"), at("10:30:24"), "SENSOR-0", 1, 22.5, [6]),
        ],
        first_sessions,
        first_sessions + later[:1],
        first_sessions + later,
    ]


def test_append_with_a_watermark_sends_each_session_once_when_the_watermark_passes_its_end(runs):
    closed = runs["closed sessions"]

    assert rows(closed) == [
        [],
        [],
        [],
        [
            (at("10:30:02"), at("10:30:15"), "SENSOR-0", 3, 21.0, [1, 3, 4]),
            (at("10:30:03"), at("10:30:17"), "SENSOR-1", 4, 19.63, [2, 5, 8, 9]),
        ],
        [
            (at("10:30:19"), at("10:30:26"), "SENSOR-0", 2, 22.75, [6, 7])
        ],  # batch 4 reads nothing new
    ]
    # Latest event time so far minus 10 s; the sessions still open at the end are never sent.
    assert [demos.short_time(batch.watermark) for batch in closed.batches] == [
        "",
        "10:30:09",
        "10:30:11",
        "10:30:17",
        "10:30:30",
    ]


def test_session_windows_refuse_update_mode_with_or_without_a_watermark(spark, tmp_path, capsys):
    readings = spark.readStream.schema(lesson.SENSOR_SCHEMA).json(str(tmp_path))

    plain = demos.show_refusal(
        lambda: lesson.start_noop(lesson.build_sessions(readings), "update"),
        "A session window in update mode",
    )
    marked = demos.show_refusal(
        lambda: lesson.start_noop(lesson.build_closed_sessions(readings), "update"),
        "The same with a watermark",
    )

    for message in (plain, marked):
        assert "Invalid streaming output mode: update" in message and "session window" in message
    assert (
        "A session window in update mode fails:\n  [STREAMING_OUTPUT_MODE"
        in capsys.readouterr().out
    )


def test_a_malformed_live_line_is_quarantined_with_its_reason_not_windowed(spark, tmp_path):
    good = [
        sensor_reading(1, "SENSOR-0", "10:30:01", 20.0),
        sensor_reading(2, "SENSOR-0", "10:30:04", 22.0),
        sensor_reading(3, "SENSOR-1", "10:30:12", 30.0),
    ]
    missing_sensor = {**sensor_reading(4, "SENSOR-1", "10:30:13"), "sensor_id": None}
    write_atomically(
        tmp_path / "in",
        "readings-0001.json",
        json_lines(good[:2])
        + '{"reading_id": 9, "sensor_id": "SENS\n'
        + json_lines([good[2], missing_sensor]),
    )
    lines = lesson.read_readings(spark, tmp_path / "in")

    windows = collect_batches(
        lesson.build_live_windows(lines),
        tmp_path / "chk",
        output_mode="update",
        sort_key=lambda row: (row.window_start, row.sensor_id),
    )
    bad = collect_batches(
        quarantined(lines, "source_file"), tmp_path / "chk_bad", sort_key=lambda row: row.reason
    )

    assert windows.rows() == [
        (at("10:30:00"), at("10:30:10"), "SENSOR-0", 2, 21.0),
        (at("10:30:10"), at("10:30:20"), "SENSOR-1", 1, 30.0),
    ]
    assert [tuple(row)[:2] for row in bad.rows()] == [
        ("readings-0001.json", "missing sensor_id"),
        ("readings-0001.json", "not a JSON object"),
    ]


@pytest.mark.smoke
def test_lesson_06_runs_by_itself(course_home):
    result = run_script("streaming_tutorial/06_windowing.py", "--duration", "3", home=course_home)

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert (
        "  tumbling  [10:30:00, 10:30:10)  3 readings, avg 20.0: r1 r2 r3\n"
        "            [10:30:10, 10:30:20)"
    ) in out
    assert "            SENSOR-1 [10:30:03, 10:30:17)  4 readings, avg 19.63: r2 r5 r8 r9\n" in out
    assert (
        "A session window in update mode fails:\n  [STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION]"
        in out
    )
    assert re.search(
        r"Batch 3 reads: r11\n  closed sessions  SENSOR-0 \[10:30:02, 10:30:15\).*"
        r"\[watermark 10:30:17\]\n\s+SENSOR-1 \[10:30:03, 10:30:17\)",
        out,
    )
    assert "Started the sensors simulator for this run" in out
    assert "The live query read" in out and "quarantine: none." in out.replace("\n", " ")

"""Lesson 07: watermarks and late data, row by row on the lesson's own scenario.

The scenario is replayed the way the lesson replays it (``demos.replay``, one file per
micro-batch, availableNow); the two watermarks of each batch come from the query progress.
"""

from __future__ import annotations

import re

import pytest

from common.schemas import SENSOR_SCHEMA
from conftest import at, load_lesson, prose, run_script
from infra.runner import finish
from teaching import demos, lateness

lesson = load_lesson("07_watermarking")


@pytest.fixture(scope="module")
def scenario_run(spark, tmp_path_factory):
    windows = demos.Output(
        lesson.build_window_counts, "append", sort_key=lambda window: window.window_start
    )
    runs = demos.replay(
        spark,
        lesson.to_readings(lesson.SCENARIO),
        SENSOR_SCHEMA,
        {"windows": windows},
        tmp_path_factory.mktemp("watermark"),
        describe_rows=str,
        show=False,
    )
    return runs["windows"]


def short(marks) -> list:
    return [demos.short_time(mark) or None for mark in marks]


def test_each_batch_runs_with_the_previous_batchs_watermark_for_late_rows_and_its_own_for_windows(
    scenario_run,
):
    # Batch 5 reads nothing: it runs because the watermark moved.
    closing = [batch.watermark for batch in scenario_run.batches]
    assert short(closing) == [None, "10:30:02", "10:30:14", "10:30:21", "10:30:21", "10:30:45"]
    assert closing == [p["eventTime"]["watermark"] for p in scenario_run.progress]
    late_rows = lateness.late_row_watermarks(scenario_run)
    assert short(late_rows.values()) == [None, None, "10:30:02", "10:30:14", "10:30:21", "10:30:21"]


def test_append_mode_emits_each_window_once_when_the_watermark_passes_its_end(scenario_run):
    emitted = [
        [(w.window_start, w.window_end, w.reading_ids) for w in batch.rows]
        for batch in scenario_run.batches
    ]

    assert emitted == [
        [],
        [],
        [
            (at("10:30:00"), at("10:30:10"), [1, 2, 4, 6])
        ],  # r4@01 and r6@08 were behind, but their window was open
        # r9@13 is older than the late-row watermark (10:30:14), yet its window ends after it;
        # batch 3's own watermark (10:30:21) closes that window in the same batch.
        [(at("10:30:10"), at("10:30:20"), [3, 9])],
        [],
        [
            (at("10:30:20"), at("10:30:30"), [5, 11]),
            (at("10:30:30"), at("10:30:40"), [7]),
        ],  # [50, 60) stays open
    ]


def test_a_row_is_dropped_when_its_window_ended_by_the_previous_batchs_watermark(scenario_run):
    # r8@09 (window end 10:30:10 <= 10:30:14) in batch 3 and r10@19 (end 10:30:20 <= 10:30:21) in
    # batch 4. Had batch 3 dropped rows with its own watermark (10:30:21), r9 (end 10:30:20)
    # would be gone too.
    drops = [
        sum(op["numRowsDroppedByWatermark"] for op in p["stateOperators"])
        for p in scenario_run.progress
    ]
    assert drops == [0, 0, 0, 1, 1, 0]
    counted = {i for window in scenario_run.rows() for i in window.reading_ids}
    assert counted == set(range(1, 13)) - {8, 10, 12}


def test_the_table_and_the_picture_show_both_watermarks(scenario_run, tmp_path, capsys):
    fates = lateness.show_window_lateness(
        scenario_run,
        lesson.SCENARIO,
        window_seconds=lesson.WINDOW_SECONDS,
        ids="reading_ids",
        picture=tmp_path / "late.png",
        title=lesson.PLOT_TITLE,
    )

    out = capsys.readouterr().out
    assert re.search(
        r"^  3\s+r8@09 r9@13\s+10:30:14\s+10:30:21\s+\[10,20\) r3 r9\s+r8$", out, re.MULTILINE
    ), out
    assert re.search(
        r"^  5\s+\(no new data\)\s+10:30:21\s+10:30:45\s+\[20,30\) r5 r11\s+-\n\s+\[30,40\) r7$",
        out,
        re.MULTILINE,
    )
    assert (
        "numRowsDroppedByWatermark): 2 rows dropped; records missing from every window: 2." in out
    )
    assert [label for label, fate in fates.items() if fate != "counted"] == ["r8", "r10", "r12"]
    assert fates["r12"] == "waiting"
    import matplotlib.image

    assert matplotlib.image.imread(tmp_path / "late.png").shape[:2] == (550, 900)


def test_state_grows_without_a_watermark_and_stays_bounded_with_one(spark, tmp_path):
    probes = lesson.start_state_probes(spark, tmp_path / "state")
    finish(list(probes.values()))

    assert lateness.state_rows(probes["without watermark"].recentProgress) == {
        0: 1,
        1: 2,
        2: 3,
        3: 4,
        4: 5,
        5: 6,
    }
    assert lateness.state_rows(probes["with watermark"].recentProgress) == {
        0: 1,
        1: 2,
        2: 3,
        3: 3,
        4: 3,
        5: 3,
        6: 2,
    }


@pytest.mark.smoke
def test_lesson_07_runs_by_itself(course_home):
    result = run_script(
        "streaming_tutorial/07_watermarking.py", "--duration", "3", home=course_home
    )

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert re.search(
        r"^  3\s+r8@09 r9@13\s+10:30:14\s+10:30:21\s+\[10,20\) r3 r9\s+r8$", out, re.MULTILINE
    ), out[:3000]
    assert "numRowsDroppedByWatermark): 2 rows dropped" in out
    assert re.search(r"^  5\s+6\s+3$", out, re.MULTILINE)
    assert re.search(
        r"The live query read \d+ rows in \d+ micro-batch(es)? and dropped \d+ as too late",
        prose(out),
    )
    picture = course_home / "output" / "07_watermarking" / "late_events.png"
    assert picture.read_bytes()[:4] == b"\x89PNG"

"""teaching.lateness: the two watermarks of each micro-batch, as a table and a picture (no JVM
needed)."""

from __future__ import annotations

import re

from pyspark.sql import Row

from conftest import at, iso_at
from teaching.lateness import (
    Arrival,
    BatchPicture,
    describe_progress,
    dropped_by_watermark,
    iso_after,
    late_row_watermarks,
    plot_arrivals,
    print_state_rows,
    replay_pictures,
    seconds_after,
    show_window_lateness,
    state_rows,
    watermark_table,
)
from teaching.microbatch import BatchResult, Run

EPOCH = "1970-01-01T00:00:00.000Z"


def progress(batch_id: int, watermark: str, rows: int, *, dropped: int = 0, state: int = 0) -> dict:
    return {
        "batchId": batch_id,
        "numInputRows": rows,
        "eventTime": {"watermark": watermark},
        "durationMs": {"addBatch": 5, "triggerExecution": 9},
        "stateOperators": [{"numRowsTotal": state, "numRowsDroppedByWatermark": dropped}],
    }


def window(start: str, end: str, *ids: int) -> Row:
    return Row(window_start=at(start), window_end=at(end), ids=list(ids))


# Two 10 s windows; a late record 3 (window [00,10)) comes after the watermark passed 10:30:10.
SCENARIO = [[(1, 2), (2, 15)], [(3, 4), (4, 31)], []]
RUN = Run(
    batches=[
        BatchResult(0, [], EPOCH),
        BatchResult(1, [window("10:30:00", "10:30:10", 1)], iso_at("10:30:05")),
        BatchResult(2, [window("10:30:10", "10:30:20", 2)], iso_at("10:30:21")),
    ],
    progress=[
        progress(0, EPOCH, 2, state=2),
        progress(1, iso_at("10:30:05"), 2, dropped=1, state=2),
        progress(2, iso_at("10:30:21"), 0, state=1),
        # an idle report: the next batch's id, no addBatch, the last batch's state figures
        {**progress(3, iso_at("10:30:21"), 0, state=1), "durationMs": {"triggerExecution": 1}},
    ],
)


def test_late_rows_are_dropped_with_the_previous_batchs_watermark():
    assert late_row_watermarks(RUN) == {0: None, 1: EPOCH, 2: iso_at("10:30:05")}


def test_the_table_shows_both_watermarks_and_one_line_per_sink_row():
    records = [[{"id": 1}], [{"id": 3}]]
    table = watermark_table(
        records,
        RUN,
        describe_input=lambda rs: " ".join(f"#{r['id']}" for r in rs),
        describe_row=lambda row: str(row.ids),
        describe_dropped=lambda rs: " ".join(f"#{r['id']}" for r in rs if r["id"] == 3),
    )
    assert table == [
        ("0", "#1", "-", "-", "-", "-"),
        ("1", "#3", "-", "10:30:05", "[1]", "#3"),
        ("2", "(no new data)", "10:30:05", "10:30:21", "[2]", "-"),
    ]


def test_times_as_seconds_after_the_scenarios_start_and_back():
    assert seconds_after(iso_at("10:30:14")) == 14
    assert seconds_after(at("10:29:50")) == -10
    assert seconds_after(EPOCH) is None and seconds_after(None) is None
    assert iso_after(14) == iso_at("10:30:14")


def test_progress_readings():
    assert dropped_by_watermark(RUN.progress) == 1
    assert state_rows(RUN.progress) == {0: 2, 1: 2, 2: 1}
    assert describe_progress(RUN.progress) == (
        "read 4 rows in 3 micro-batches and dropped 1 as too late; its watermark ended at 10:30:21."
    )
    assert describe_progress([]).endswith("its watermark never moved from its start.")


def test_state_rows_side_by_side(capsys):
    print_state_rows({"a": RUN.progress, "b": RUN.progress[:2]})

    assert capsys.readouterr().out.splitlines() == [
        "  batch  state rows a  state rows b",
        "  0      2             2",
        "  1      2             2",
        "  2      1             -",
    ]


def test_a_windowed_replay_is_shown_with_each_records_fate(tmp_path, capsys):
    scenario = [[(1, 2), (2, 15)], [(3, 4), (4, 31)]]
    run = Run(batches=RUN.batches, progress=RUN.progress)

    fates = show_window_lateness(
        run, scenario, window_seconds=10, ids="ids", picture=tmp_path / "late.png", title="test"
    )

    # 3's window [00,10) was closed: dropped. 4's window [30,40) is still open at 10:30:21.
    assert fates == {"r1": "counted", "r2": "counted", "r3": "dropped", "r4": "waiting"}
    out = capsys.readouterr().out
    assert re.search(
        r"^  1\s+r3@04 r4@31\s+-\s+10:30:05\s+\[00,10\) r1\s+r3$", out, re.MULTILINE
    ), out
    assert "1 rows dropped; records missing from every window: 1." in out
    assert (tmp_path / "late.png").read_bytes()[:4] == b"\x89PNG"


def test_the_picture_gets_each_batchs_points_and_watermarks(tmp_path):
    points = [[("r1", 2), ("r2", 15)], [("r3", 4), ("r4", 31)]]
    fates = {"r1": "counted", "r2": "counted", "r3": "dropped", "r4": "waiting"}

    pictures = replay_pictures(points, RUN, fates, too_late_below=lambda mark: mark // 10 * 10)

    assert pictures == [
        BatchPicture(
            0, [Arrival("r1", 2, "counted"), Arrival("r2", 15, "counted")], None, None, None
        ),
        BatchPicture(1, [Arrival("r3", 4, "dropped"), Arrival("r4", 31, "waiting")], None, 5, None),
        BatchPicture(2, [], 5, 21, 0),
    ]
    import matplotlib.image

    target = plot_arrivals(pictures, tmp_path / "p.png", title="t", ylabel="s", ylim=(-5, 40))
    assert matplotlib.image.imread(target).shape[:2] == (550, 900)

"""Lesson 02: what complete, update and append send, batch by batch; the modes Spark refuses."""

from __future__ import annotations

import pytest
from pyspark.sql import Row

from conftest import at, load_lesson, run_script
from teaching import demos
from teaching.microbatch import collect_batches, stream_batches, write_batches

modes = load_lesson("02_output_modes")
# The walk-through's two longest lines: the docstring shows them trimmed to its width.
WALKTHROUGH_LONG_LINES = (
    "  append    [10:30-10:31) books: 2 orders, avg 20.0 | [10:30-10:31) games: 1 order, avg 20.0"
    "   [watermark 10:31:00]",
    "  append    [10:31-10:32) games: 1 order, avg 40.0 | [10:31-10:32) music: 1 order, avg 5.0"
    "   [watermark 10:32:20]",
)


@pytest.fixture
def orders(spark, tmp_path):
    """The lesson's own three walk-through batches, as a stream (one file per batch)."""
    write_batches(tmp_path / "orders", modes.WALKTHROUGH_BATCHES)
    return stream_batches(spark, tmp_path / "orders", modes.ORDER_SCHEMA)


def stats(category: str, orders: int, avg: float) -> Row:
    return Row(category=category, orders=orders, avg_amount=avg)


def by_category(row) -> str:
    return row.category


def test_complete_mode_sends_the_whole_table_every_batch(orders, tmp_path):
    run = collect_batches(
        modes.build_category_stats(orders),
        tmp_path / "chk",
        output_mode="complete",
        sort_key=by_category,
    )

    assert [batch.rows for batch in run.batches] == [
        [stats("books", 2, 20.0), stats("games", 1, 20.0)],
        [stats("books", 2, 20.0), stats("games", 2, 30.0), stats("music", 1, 5.0)],
        [stats("books", 3, 20.0), stats("games", 2, 30.0), stats("music", 1, 5.0)],
    ]


def test_update_mode_sends_only_the_rows_that_changed(orders, tmp_path):
    run = collect_batches(
        modes.build_category_stats(orders),
        tmp_path / "chk",
        output_mode="update",
        sort_key=by_category,
    )

    assert [batch.rows for batch in run.batches] == [
        [stats("books", 2, 20.0), stats("games", 1, 20.0)],
        [stats("games", 2, 30.0), stats("music", 1, 5.0)],
        [stats("books", 3, 20.0)],
    ]


def test_append_mode_sends_each_window_once_after_the_watermark_passes_it(orders, tmp_path):
    run = collect_batches(
        modes.build_windowed_category_stats(orders),
        tmp_path / "chk",
        output_mode="append",
        sort_key=lambda row: (row.window.start, row.category),
    )

    def window(start: str, end: str, category: str, orders: int, avg: float) -> tuple:
        return (at(start), at(end), category, orders, avg)

    emitted = [
        [(r.window.start, r.window.end, r.category, r.orders, r.avg_amount) for r in batch.rows]
        for batch in run.batches
    ]
    # Batches 0 and 1: no window has ended before the watermark. Batch 2 closes 10:30-10:31;
    # batch 3 has no input but runs because the watermark moved, and closes 10:31-10:32.
    # The 10:32 window is still open when the input ends, so it is never emitted.
    assert emitted == [
        [],
        [],
        [
            window("10:30:00", "10:31:00", "books", 2, 20.0),
            window("10:30:00", "10:31:00", "games", 1, 20.0),
        ],
        [
            window("10:31:00", "10:32:00", "games", 1, 40.0),
            window("10:31:00", "10:32:00", "music", 1, 5.0),
        ],
    ]
    assert [batch.watermark for batch in run.batches] == [
        "1970-01-01T00:00:00.000Z",
        "2025-01-15T10:30:10.000Z",
        "2025-01-15T10:31:00.000Z",
        "2025-01-15T10:32:20.000Z",
    ]


def test_append_on_an_aggregation_and_complete_on_plain_rows_are_refused(spark):
    live = modes.build_live_orders(modes.read_rate(spark))

    append = demos.show_refusal(
        lambda: modes.start_noop(modes.build_category_stats(live), "append"), "append"
    )
    complete = demos.show_refusal(lambda: modes.start_noop(live, "complete"), "complete")

    assert "STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION" in append and "without watermark" in append
    assert (
        "STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION" in complete
        and "output mode: complete" in complete
    )
    assert not spark.streams.active


def test_live_orders_cycle_through_the_categories(spark):
    rate_rows = spark.createDataFrame(
        [(at(f"10:30:0{n}"), n) for n in range(6)], "timestamp timestamp, value long"
    )

    rows = modes.build_live_orders(rate_rows).collect()

    assert [(r.category, r.amount, r.event_time) for r in rows] == [
        ("books", 1.0, at("10:30:00")),
        ("games", 8.0, at("10:30:01")),
        ("music", 15.0, at("10:30:02")),
        ("films", 22.0, at("10:30:03")),
        ("toys", 5.0, at("10:30:04")),
        ("books", 12.0, at("10:30:05")),
    ]


def test_describe_row_names_the_window_when_there_is_one():
    window = Row(start=at("10:30:00"), end=at("10:31:00"))

    assert (
        modes.describe_row(Row(category="games", orders=1, avg_amount=20.0))
        == "games: 1 order, avg 20.0"
    )
    assert (
        modes.describe_row(Row(window=window, category="books", orders=2, avg_amount=20.0))
        == "[10:30-10:31) books: 2 orders, avg 20.0"
    )


@pytest.mark.smoke
def test_lesson_02_runs_by_itself(course_home):
    result = run_script(
        "streaming_tutorial/02_output_modes.py", "--duration", "3", home=course_home
    )

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    # The walk-through's lines, exactly as the docstring shows them; a line the docstring
    # trims ("...") starts a line of the output.
    sample = modes.__doc__.split("What you'll see\n", 1)[1].split("  ...\n", 1)[0]
    for line in sample.splitlines():
        shown = line[2:]
        if shown.endswith(" ..."):
            assert "\n" + shown.removesuffix("...") in out, line
        else:
            assert shown + "\n" in out, line
    # The two lines the docstring trims, whole.
    for line in WALKTHROUGH_LONG_LINES:
        assert "\n" + line + "\n" in out, line
    assert (
        "Append on an aggregation without a watermark fails:\n"
        "  [STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION]"
    ) in out
    assert (
        "Complete without an aggregation fails:\n  [STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION]"
        in out
    )
    # The live part: batch 0 of every query holds the same three orders (rate-micro-batch).
    header = (
        "+--------+------+----------+\n|category|orders|avg_amount|\n+--------+------+----------+\n"
    )
    first_three = (
        "|books   |1     |1.0       |\n|games   |1     |8.0       |\n|music   |1     |15.0      |\n"
    )
    for mode in ("complete", "update"):
        assert f"--- {mode} · batch 0 ---\n{header}{first_three}" in out
    assert (
        "--- append · batch 0 ---\n"
        "+--------+------+-------------------+\n"
        "|category|amount|event_time         |\n"
        "+--------+------+-------------------+\n"
        "|books   |1.0   |2025-01-15 10:30:00|\n"
    ) in out
    assert "StackOverflowError" not in result.stderr

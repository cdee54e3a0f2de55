"""Lesson 12: per-user state with applyInPandasWithState and an event-time timeout.

The stateful query runs on three hand-written micro-batches (one file each, availableNow)
and every batch's output rows are checked exactly, including the no-data batch in which
the moved watermark closes an idle user.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from pyspark.sql import Row

from common.microbatch import collect_batches, stream_batches, write_batches
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from conftest import load_lesson, run_script

lesson = load_lesson("12_stateful_processing")


def event(number: int, user: str, kind: str, time_of_day: str, price: float = 10.0, quantity: int = 1) -> dict:
    return {
        "event_id": f"EVT-{number:06d}",
        "user_id": user,
        "event_type": kind,
        "product_id": "P001",
        "product_name": "Coffee Maker",
        "category": "Home",
        "price": price,
        "quantity": quantity,
        "timestamp": f"2025-01-15T{time_of_day}.000Z",
    }


def at(time_of_day: str) -> datetime:
    return datetime.fromisoformat(f"2025-01-15T{time_of_day}")


def row(user: str, status: str, events: int, purchases: int, spent: float, last_seen: str) -> Row:
    return Row(user_id=user, status=status, events=events, purchases=purchases, total_spent=spent,
               last_seen=at(last_seen))


# Idle timeout 1 minute, watermark = newest event time seen - 10 s (the lesson's defaults).
BATCHES = [
    # U1 views and buys 2 x 20.00; U2 looks once.
    [
        event(1, "U1", "view", "10:30:00"),
        event(2, "U1", "purchase", "10:30:10", price=20.0, quantity=2),
        event(3, "U2", "view", "10:30:20"),
    ],
    # U1 comes back: its state accumulates. Newest time 10:31:40 -> watermark 10:31:30,
    # past U2's timeout (10:30:20 + 1 min).
    [event(4, "U1", "view", "10:31:00"), event(5, "U3", "cart", "10:31:40", price=5.0, quantity=3)],
    # U3 buys; U2's event is older than the watermark (10:31:30), so it is dropped and U2
    # stays closed. Newest time 10:33:00 -> watermark 10:32:50, past U1's timeout (10:32:00),
    # which only a further batch (with no data) acts on.
    [event(6, "U3", "purchase", "10:33:00", price=5.0, quantity=3), event(7, "U2", "view", "10:29:00")],
]


@pytest.fixture
def user_state_run(spark, tmp_path):
    write_batches(tmp_path / "in", BATCHES)
    user_state = lesson.build_user_state(stream_batches(spark, tmp_path / "in", ECOMMERCE_EVENT_SCHEMA))
    return collect_batches(user_state, tmp_path / "chk", output_mode="update", sort_key=lambda r: r.user_id)


def test_state_accumulates_per_user_and_idle_users_get_one_closing_row(user_state_run):
    assert [batch.rows for batch in user_state_run.batches] == [
        [row("U1", "active", 2, 1, 40.0, "10:30:10"), row("U2", "active", 1, 0, 0.0, "10:30:20")],
        [row("U1", "active", 3, 1, 40.0, "10:31:00"), row("U3", "active", 1, 0, 0.0, "10:31:40")],
        # The timeout fires in the batch after the watermark passed it; U2's late event is gone.
        [row("U2", "closed", 1, 0, 0.0, "10:30:20"), row("U3", "active", 2, 1, 15.0, "10:33:00")],
        # A batch without new data: the watermark moved, so U1's timeout fires.
        [row("U1", "closed", 3, 1, 40.0, "10:31:00")],
    ]


def test_the_no_data_batch_runs_on_the_moved_watermark(user_state_run):
    assert [batch.watermark for batch in user_state_run.batches] == [
        "1970-01-01T00:00:00.000Z",
        "2025-01-15T10:30:10.000Z",
        "2025-01-15T10:31:30.000Z",
        "2025-01-15T10:32:50.000Z",
    ]
    # 4 batches, but only 3 files: the last one read nothing.
    assert [p["numInputRows"] for p in user_state_run.progress] == [3, 2, 2, 0]


def test_closed_users_leave_the_state_store(user_state_run):
    state = [p["stateOperators"][0] for p in user_state_run.progress]
    assert [s["numRowsTotal"] for s in state] == [2, 3, 2, 1]  # only U3 is left
    assert [s["numRowsRemoved"] for s in state] == [0, 0, 1, 1]


def test_a_longer_idle_timeout_keeps_everyone_open(spark, tmp_path):
    write_batches(tmp_path / "in", BATCHES)
    user_state = lesson.build_user_state(
        stream_batches(spark, tmp_path / "in", ECOMMERCE_EVENT_SCHEMA), idle_timeout=timedelta(minutes=10)
    )
    run = collect_batches(user_state, tmp_path / "chk", output_mode="update", sort_key=lambda r: r.user_id)
    assert [batch.rows for batch in run.batches] == [
        [row("U1", "active", 2, 1, 40.0, "10:30:10"), row("U2", "active", 1, 0, 0.0, "10:30:20")],
        [row("U1", "active", 3, 1, 40.0, "10:31:00"), row("U3", "active", 1, 0, 0.0, "10:31:40")],
        # U2's late event is still dropped: the watermark does not depend on the timeout.
        [row("U3", "active", 2, 1, 15.0, "10:33:00")],
        [],  # the no-data batch still runs (the watermark moved), but no timeout is due
    ]


def test_malformed_lines_do_not_become_a_user(spark, tmp_path):
    folder = tmp_path / "in"
    write_batches(folder, [[event(1, "U1", "view", "10:30:00"), {"user_id": "U9"}, {"event_id": "broken"}]])
    run = collect_batches(
        lesson.build_user_state(stream_batches(spark, folder, ECOMMERCE_EVENT_SCHEMA)),
        tmp_path / "chk", output_mode="update", sort_key=lambda r: r.user_id,
    )
    assert run.rows() == [row("U1", "active", 1, 0, 0.0, "10:30:00")]


def test_map_groups_with_state_is_not_a_pyspark_api(spark, capsys):
    assert lesson.explain_missing_map_groups_with_state(spark) is False
    assert "applyInPandasWithState" in capsys.readouterr().out


@pytest.mark.smoke
def test_lesson_runs_alone_starting_its_simulator(course_home):
    result = run_script("streaming_tutorial/12_stateful_processing.py", home=course_home)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "grouped.mapGroupsWithState exists in PySpark: False" in out
    assert "Started the ecommerce simulator for this run" in out
    assert "|user_id  |status|events|purchases|total_spent|last_seen" in out
    assert "|active|" in out
    assert re.search(r"keeps \d+ open\s+users", out)
    # The simulator writes the same events as the sample data from 10:30:00 on.
    assert "2025-01-15 10:3" in out


def test_malformed_lines_left_out_of_state_are_counted(spark, tmp_path):
    folder = tmp_path / "events"
    folder.mkdir()
    good = '{"event_id":"E1","user_id":"U1","event_type":"view","timestamp":"2025-01-15T10:30:00.000Z"}\n'
    (folder / "events-0001.json").write_text(good + '{"event_id":"E2","user_id":\n' + good.replace("U1", "U2"))

    assert lesson.count_left_out(spark, folder) == 1
    assert lesson.count_left_out(spark, tmp_path / "empty-folder-that-does-not-exist") == 0

"""Lesson 12: per-user state with applyInPandasWithState and an event-time timeout.

The stateful query runs on three hand-written micro-batches (one file each, availableNow)
and every batch's output rows are checked exactly, including the no-data batch in which
the moved watermark closes idle users, and a new user whose only event is older than the
watermark its GroupState sees.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import Row
from pyspark.sql.types import StringType, StructField, StructType

from common.parsing import parse_json, quarantined, valid_records
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from conftest import at, load_lesson, shop_event
from teaching.microbatch import collect_batches, stream_batches, write_batches

lesson = load_lesson("12_stateful_processing")
LINES = StructType([StructField("value", StringType())])


def row(user: str, status: str, events: int, purchases: int, spent: float, last_seen: str) -> Row:
    return Row(
        user_id=user,
        status=status,
        events=events,
        purchases=purchases,
        total_spent=spent,
        last_seen=at(last_seen),
    )


# Idle timeout 1 minute, watermark = newest event time seen - 10 s (the lesson's defaults).
BATCHES = [
    # U1 views and buys 2 x 20.00; U2 looks once. Watermark after: 10:30:20 - 10 s = 10:30:10.
    [
        shop_event(1, "U1", "view", "10:30:00"),
        shop_event(2, "U1", "purchase", "10:30:10", price=20.0, quantity=2),
        shop_event(3, "U2", "view", "10:30:20"),
    ],
    # U1 comes back: its state accumulates. Newest time 10:31:40 -> watermark 10:31:30,
    # past U2's timeout (10:30:20 + 1 min).
    [
        shop_event(4, "U1", "view", "10:31:00"),
        shop_event(5, "U3", "cart", "10:31:40", price=5.0, quantity=3),
    ],
    # U3 buys. Late rows are filtered with the previous batch's watermark (10:30:10): U2's
    # 10:29:00 is dropped, so U2 stays closed; new user U4's 10:30:15 gets in, although the
    # watermark its GroupState sees is 10:31:30, later than 10:30:15 + 1 min. Newest time
    # 10:33:00 -> watermark 10:32:50, past U1's timeout (10:32:00): a further batch acts on it.
    [
        shop_event(6, "U3", "purchase", "10:33:00", price=5.0, quantity=3),
        shop_event(7, "U2", "view", "10:29:00"),
        shop_event(8, "U4", "view", "10:30:15"),
    ],
]


def run_user_state(spark, folder, batches=BATCHES, **options):
    write_batches(folder / "in", batches)
    user_state = lesson.build_user_state(
        stream_batches(spark, folder / "in", ECOMMERCE_EVENT_SCHEMA), **options
    )
    return collect_batches(
        user_state, folder / "chk", output_mode="update", sort_key=lambda r: r.user_id
    )


@pytest.fixture(scope="module")
def user_state_run(spark, tmp_path_factory):
    return run_user_state(spark, tmp_path_factory.mktemp("user_state"))


def test_state_accumulates_per_user_and_idle_users_get_one_closing_row(user_state_run):
    assert [batch.rows for batch in user_state_run.batches] == [
        [row("U1", "active", 2, 1, 40.0, "10:30:10"), row("U2", "active", 1, 0, 0.0, "10:30:20")],
        [row("U1", "active", 3, 1, 40.0, "10:31:00"), row("U3", "active", 1, 0, 0.0, "10:31:40")],
        # The timeout fires in the batch after the watermark passed it; U2's late event is gone.
        # U4's timeout would be 10:31:15, behind the watermark: it is set to 10:31:30.001 instead.
        [
            row("U2", "closed", 1, 0, 0.0, "10:30:20"),
            row("U3", "active", 2, 1, 15.0, "10:33:00"),
            row("U4", "active", 1, 0, 0.0, "10:30:15"),
        ],
        # A batch without new data: the watermark moved, so U1's and U4's timeouts fire.
        [row("U1", "closed", 3, 1, 40.0, "10:31:00"), row("U4", "closed", 1, 0, 0.0, "10:30:15")],
    ]


def test_the_no_data_batch_runs_on_the_moved_watermark(user_state_run):
    assert [batch.watermark for batch in user_state_run.batches] == [
        "1970-01-01T00:00:00.000Z",
        "2025-01-15T10:30:10.000Z",
        "2025-01-15T10:31:30.000Z",
        "2025-01-15T10:32:50.000Z",
    ]
    # 4 batches, but only 3 files: the last one read nothing.
    assert [p["numInputRows"] for p in user_state_run.progress] == [3, 2, 3, 0]


def test_closed_users_leave_the_state_store(user_state_run):
    state = [p["stateOperators"][0] for p in user_state_run.progress]
    assert [s["numRowsTotal"] for s in state] == [2, 3, 3, 1]  # only U3 is left
    assert [s["numRowsRemoved"] for s in state] == [0, 0, 1, 2]
    # Only U2's 10:29:00 was too late for the previous batch's watermark (10:30:10).
    assert [s["numRowsDroppedByWatermark"] for s in state] == [0, 0, 1, 0]


def test_a_longer_idle_timeout_keeps_everyone_open(spark, tmp_path):
    run = run_user_state(spark, tmp_path, idle_timeout=timedelta(minutes=10))

    assert [batch.rows for batch in run.batches] == [
        [row("U1", "active", 2, 1, 40.0, "10:30:10"), row("U2", "active", 1, 0, 0.0, "10:30:20")],
        [row("U1", "active", 3, 1, 40.0, "10:31:00"), row("U3", "active", 1, 0, 0.0, "10:31:40")],
        # U2's late event is still dropped: the watermark does not depend on the timeout.
        [row("U3", "active", 2, 1, 15.0, "10:33:00"), row("U4", "active", 1, 0, 0.0, "10:30:15")],
        [],  # the no-data batch still runs (the watermark moved), but no timeout is due
    ]


def test_malformed_lines_go_to_the_quarantine_not_into_a_user(spark, tmp_path):
    good = (
        '{"event_id":"E1","user_id":"U1","event_type":"view",'
        '"timestamp":"2025-01-15T10:30:00.000Z"}'
    )
    write_batches(
        tmp_path / "in",
        [
            [
                {"value": good},
                {"value": '{"event_id":"E2","user_id":'},
                {"value": good.replace(',"user_id":"U1"', "")},
            ]
        ],
    )
    events = parse_json(stream_batches(spark, tmp_path / "in", LINES), ECOMMERCE_EVENT_SCHEMA)

    users = collect_batches(
        lesson.build_user_state(valid_records(events, ECOMMERCE_EVENT_SCHEMA)),
        tmp_path / "users",
        output_mode="update",
    )
    bad = collect_batches(quarantined(events), tmp_path / "bad")

    assert users.rows() == [row("U1", "active", 1, 0, 0.0, "10:30:00")]
    assert sorted(tuple(line) for line in bad.rows()) == [
        ("missing user_id", good.replace(',"user_id":"U1"', "")),
        ("not a JSON object", '{"event_id":"E2","user_id":'),
    ]


# The smoke run of this lesson, as a learner runs it, is on a Spark standalone cluster:
# tests/test_cluster.py.

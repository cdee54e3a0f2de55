"""Lesson 15: transformWithState sessions, the state read back, dedup within a watermark, state
schemas.

The sessions query runs on three hand-written micro-batches (one file each, availableNow) on
RocksDB, set for this module on the shared session and restored afterwards (lesson 12's
applyInPandasWithState runs on the default store in the same session). Every batch's output,
the timers included, and every row the state data source reads back from that checkpoint are
checked exactly. The processor is also tested alone with pyspark's TwsTester (no query), and
session_conf, from the lesson's companion lesson15_state_demos.py, on its own.

Added for issue 23: initialState (and the state read at an older batchId), a TTL that expires
in ProcessingTime mode (the test waits, polling the wall clock, until the TTL has passed before
the second run: the rows do not depend on how long it waited), eventTimeColumnName under a
window, the change feed of the default (HDFS-backed) store and its absence on RocksDB without
changelog checkpointing, and the default encoding's silent acceptance of a renamed field.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from lesson15_state_demos import (
    rows_of,
    run_afresh,
    run_twice,
    session_conf,
    start_restarted,
    views_by,
    views_of_u1,
)
from pyspark.sql import Row
from pyspark.sql.streaming import StatefulProcessor, TwsTester

from common.schemas import ECOMMERCE_EVENT_SCHEMA
from conftest import at, load_lesson, prose, run_script, shop_event
from infra import checkpoints
from teaching import state_reader
from teaching.demos import show_refusal
from teaching.microbatch import collect_batches, stream_batches, write_batches

lesson = load_lesson("15_state_store")


@pytest.fixture(scope="module")
def rocksdb(spark):
    """RocksDB with changelog checkpointing for this module's queries; the session's own conf
    afterwards."""
    before = spark.conf.get(lesson.PROVIDER_CONF, None)
    with session_conf(spark, lesson.STATE_STORE_CONF):
        yield spark
    assert spark.conf.get(lesson.PROVIDER_CONF, None) == before


def session(user, status, events, spent, products, path, last_seen) -> Row:
    return Row(
        user_id=user,
        status=status,
        events=events,
        spent=spent,
        products=products,
        path=path,
        last_seen=at(last_seen),
    )


# Session gap 1 minute, watermark = newest event time seen - 10 s (the lesson's defaults).
BATCHES = [
    # U1 views and buys 2 x 20.00; U2 looks once. Watermark after: 10:30:20 - 10 s = 10:30:10.
    [
        shop_event(1, "U1", "view", "10:30:00"),
        shop_event(2, "U1", "purchase", "10:30:10", price=20.0, quantity=2),
        shop_event(3, "U2", "view", "10:30:20", product="P002"),
    ],
    # U1 comes back: its session goes on (timer moved to 10:32:00). Watermark after: 10:31:30.
    [
        shop_event(4, "U1", "view", "10:31:00", product="P002"),
        shop_event(5, "U3", "cart", "10:31:40", product="P003"),
    ],
    # This batch runs with watermark 10:31:30: U2's timer (10:30:20 + 1 min) fires, and U2's
    # 10:29:00 is too late to count. U3 buys. Watermark after: 10:33:00 - 10 s = 10:32:50.
    [
        shop_event(6, "U3", "purchase", "10:33:00", product="P003", price=5.0, quantity=3),
        shop_event(7, "U2", "view", "10:29:00"),
    ],
]


@pytest.fixture(scope="module")
def sessions_run(rocksdb, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sessions")
    write_batches(folder / "in", BATCHES)
    sessions = lesson.build_sessions(stream_batches(rocksdb, folder / "in", ECOMMERCE_EVENT_SCHEMA))
    run = collect_batches(
        sessions, folder / "chk", output_mode="update", sort_key=lambda r: r.user_id
    )
    return run, folder / "chk"


def test_sessions_stay_open_while_events_come_and_a_timer_closes_each(sessions_run):
    run, _ = sessions_run
    assert [batch.rows for batch in run.batches] == [
        [
            session("U1", "open", 2, 40.0, 1, "view>purchase", "10:30:10"),
            session("U2", "open", 1, 0.0, 1, "view", "10:30:20"),
        ],
        [
            session("U1", "open", 3, 40.0, 2, "view>purchase>view", "10:31:00"),
            session("U3", "open", 1, 0.0, 1, "cart", "10:31:40"),
        ],
        # The timer fired in the batch whose watermark (10:31:30) passed it; U2's late event is
        # gone.
        [
            session("U2", "closed", 1, 0.0, 1, "view", "10:30:20"),
            session("U3", "open", 2, 15.0, 1, "cart>purchase", "10:33:00"),
        ],
        # No new data, but the watermark moved to 10:32:50: U1's timer (10:32:00) fires.
        [session("U1", "closed", 3, 40.0, 2, "view>purchase>view", "10:31:00")],
    ]
    assert [batch.watermark[11:19] for batch in run.batches] == [
        "00:00:00",
        "10:30:10",
        "10:31:30",
        "10:32:50",
    ]
    assert [p["numInputRows"] for p in run.progress] == [3, 2, 2, 0]


def test_the_state_reader_returns_what_the_checkpoint_keeps(rocksdb, sessions_run):
    _, checkpoint = sessions_run
    states = lesson.read_session_state(rocksdb, checkpoint)

    assert state_reader.metadata_rows(states["state-metadata"]) == [
        (
            0,
            "transformWithStateInPySparkExec",
            "default",
            2,
            "0-3",
            "session (ValueState), recent_events (ListState), product_views (MapState), "
            "$eventTimers_keyToTimestamp (TimerState)",
        )
    ]
    # Only U3's session is still open: U1's and U2's timers cleared theirs.
    rows = {
        title: state_reader.text_rows(df.collect(), [c for c in df.columns if c != "partition_id"])
        for title, df in states.items()
        if title.startswith(("stateVar", "readRegistered"))
    }
    assert rows == {
        "stateVarName=session": [("U3", "2, 15.0, 10:33:00")],
        "stateVarName=recent_events": [("U3", "cart"), ("U3", "purchase")],
        "stateVarName=product_views": [("U3", "P003", "2")],
        "readRegisteredTimers": [("U3", "10:34:00")],
    }
    assert state_reader.change_rows(states["readChangeFeed"]) == [
        (0, "U1 U2", "-"),
        (1, "U1 U3", "-"),
        (2, "U3", "U2"),
        (3, "-", "U1"),
    ]


def test_state_files_show_the_changelog_of_each_batch(sessions_run):
    _, checkpoint = sessions_run
    # RocksDB with changelog checkpointing: a changelog per batch (versions 1-4), a snapshot at
    # version 1.
    files = checkpoints.state_files(checkpoint, partition=1)
    assert [name for name in files if name.endswith(".changelog")] == [
        f"{n}.changelog" for n in range(1, 5)
    ]


def utc(time_of_day: str) -> datetime:
    return datetime.fromisoformat(f"2025-01-15T{time_of_day}").replace(tzinfo=timezone.utc)


def event(
    kind: str, time_of_day: str, product: str = "P001", price: float = 10.0, quantity: int = 1
) -> Row:
    """An input row as handleInputRows gets it (Spark hands aware UTC times to a Row processor)."""
    return Row(
        event_type=kind,
        product_id=product,
        price=price,
        quantity=quantity,
        timestamp=utc(time_of_day),
    )


def test_the_processor_alone_with_tws_tester():
    tester = TwsTester(
        lesson.UserSessions(),
        timeMode="EventTime",
        outputMode="Update",
        eventTimeExtractor=lambda row: int(row.timestamp.timestamp() * 1000),
    )

    opened = tester.test(
        "U1", [event("purchase", "10:30:10", price=20.0, quantity=2), event("view", "10:30:00")]
    )

    assert opened == [
        Row(
            user_id="U1",
            status="open",
            events=2,
            spent=40.0,
            products=1,
            path="view>purchase",
            last_seen=utc("10:30:10"),
        )
    ]
    assert tester.peekValueState("session", "U1") == (2, 40.0, utc("10:30:10"))
    assert tester.peekListState("recent_events", "U1") == [("view",), ("purchase",)]
    assert tester.peekMapState("product_views", "U1") == {("P001",): (2,)}
    # The timer is due at last event + 1 min: one millisecond earlier nothing fires.
    assert tester.setWatermark(int(utc("10:31:09.999").timestamp() * 1000)) == []
    closed = tester.setWatermark(int(utc("10:31:10").timestamp() * 1000))
    assert [(row.user_id, row.status, row.events) for row in closed] == [("U1", "closed", 2)]
    assert tester.peekValueState("session", "U1") is None
    assert tester.peekMapState("product_views", "U1") == {}


def test_the_signature_in_the_4_2_docstring_example_fails():
    class AsInTheDocstring(StatefulProcessor):
        def init(self, handle):
            pass

        # No timerValues, as in GroupedData.transformWithState's example.
        def handleInputRows(self, key, rows):
            yield Row(id=key, count=1)

    with pytest.raises(TypeError, match="takes 3 positional arguments but 4 were given"):
        TwsTester(AsInTheDocstring()).test("0", [Row(id="0", temperature=123)])


def test_the_default_store_refuses_transform_with_state_once_the_query_runs(
    rocksdb, tmp_path, capsys
):
    write_batches(tmp_path / "in", BATCHES[:1])
    events = stream_batches(rocksdb, tmp_path / "in", ECOMMERCE_EVENT_SCHEMA)
    with session_conf(rocksdb, {lesson.PROVIDER_CONF: lesson.HDFS_PROVIDER}):
        query = (
            lesson.build_sessions(events)
            .writeStream.format("noop")
            .outputMode("update")
            .option("checkpointLocation", str(tmp_path / "chk"))
            .trigger(availableNow=True)
            .start()
        )
        # start() accepted it: the refusal comes once the query runs.
        show_refusal(lambda: query, "transformWithState on the default store")

    assert "STORE_BACKEND_NOT_SUPPORTED_FOR_TWS" in capsys.readouterr().out


def test_a_ttl_needs_processing_time_mode(rocksdb, tmp_path):
    write_batches(tmp_path / "in", BATCHES[:1])
    events = stream_batches(rocksdb, tmp_path / "in", ECOMMERCE_EVENT_SCHEMA)
    with pytest.raises(Exception, match="STATEFUL_PROCESSOR_INCORRECT_TIME_MODE_TO_ASSIGN_TTL"):
        collect_batches(
            lesson.build_sessions(events, recent_ttl=timedelta(hours=1)),
            tmp_path / "chk",
            output_mode="update",
        )


def test_dropduplicates_within_watermark_forgets_ids_the_other_keeps_them(rocksdb, tmp_path):
    write_batches(tmp_path / "in", views_of_u1(lesson.REPLAYED))
    events = stream_batches(rocksdb, tmp_path / "in", ECOMMERCE_EVENT_SCHEMA)
    runs = {
        label: collect_batches(
            output.build(events), tmp_path / label.replace(" ", "_"), sort_key=output.sort_key
        )
        for label, output in lesson.dedup_outputs().items()
    }

    for run in runs.values():  # each event once, whatever the number of copies
        assert [[row.event_id for row in batch.rows] for batch in run.batches][:3] == [
            ["E1", "E2"],
            ["E3"],
            ["E4"],
        ]
    kept = {
        label: [p["stateOperators"][0]["numRowsTotal"] for p in run.progress]
        for label, run in runs.items()
    }
    assert kept == {"within watermark": [2, 3, 3, 1], "dropDuplicates": [2, 3, 4]}


def test_what_lessons_07_and_09_keep_in_state(rocksdb, tmp_path):
    rows = {
        title: state_reader.text_rows(df.collect(), [c for c in df.columns if c != "partition_id"])
        for title, df in lesson.read_other_lessons_state(rocksdb, tmp_path).items()
    }

    assert rows == {
        "07: windows still open": [("10:30:10", "10:30:20", "1"), ("10:30:20", "10:30:30", "1")],
        "09: joinSide=left (impressions kept)": [
            ("IMP-1", "IMP-1, AD-1, null, 10:00:00"),
            ("IMP-2", "IMP-2, AD-2, null, 10:01:00"),
            ("IMP-3", "IMP-3, AD-1, null, 10:02:00"),
            ("IMP-4", "IMP-4, AD-2, null, 10:05:00"),
        ],
        "09: joinSide=right (clicks kept)": [
            ("IMP-1", "CLK-1, IMP-1, 10:03:00"),
            ("IMP-3", "CLK-3, IMP-3, 10:20:00"),
        ],
    }


def test_avro_state_takes_an_added_field_the_default_encoding_refuses_it(rocksdb, tmp_path):
    # The old (3,) read with the new schema.
    assert rows_of(*lesson.start_evolved_counts(rocksdb, "avro", tmp_path)) == [
        Row(user_id="U1", events=5, kept="(3, None)")
    ]

    message = show_refusal(
        lambda: lesson.start_evolved_counts(rocksdb, "unsaferow", tmp_path)[0], "unsaferow"
    )

    assert "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE" in message
    # The session's setting is back.
    assert rocksdb.conf.get(lesson.ENCODING_CONF) == "unsaferow"


def test_the_default_encoding_takes_a_renamed_field_silently_and_reads_it_by_position(
    rocksdb, tmp_path
):
    # Written as (count INT), restarted as (total INT): no refusal, the old 3 read as 'total'.
    assert rows_of(*lesson.start_renamed_counts(rocksdb, tmp_path)) == [
        Row(user_id="U1", events=5, kept="(3,)")
    ]
    state = (
        rocksdb.read.format("statestore")
        .option("stateVarName", "counts")
        .load(str(tmp_path / "rename" / "checkpoint"))
    )
    assert [(row.key.user_id, tuple(row.value)) for row in state.collect()] == [("U1", (5,))]


@pytest.mark.parametrize(
    "before, after",
    [("count INT, last_type STRING", "count INT"), ("count INT", "count BIGINT")],
    ids=["a field dropped", "a field retyped"],
)
def test_the_default_encoding_refuses_a_field_dropped_or_retyped(rocksdb, tmp_path, before, after):
    message = show_refusal(
        lambda: start_restarted(
            rocksdb,
            lambda events: lesson.build_event_counts(events, before),
            lambda events: lesson.build_event_counts(events, after),
            views_of_u1(lesson.REPLAYED[:2]),
            ECOMMERCE_EVENT_SCHEMA,
            tmp_path / "changed",
        )[0],
        f"{before} -> {after}",
    )

    assert "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE" in message


def test_initial_state_starts_the_counts_and_batch_id_reads_an_older_version(rocksdb, tmp_path):
    yesterday = rocksdb.createDataFrame(lesson.YESTERDAY, lesson.YESTERDAY_SCHEMA)  # U1 3, U2 5
    run, checkpoint = run_afresh(
        rocksdb,
        lambda events: lesson.build_event_counts(events, yesterday=yesterday),
        views_of_u1(lesson.REPLAYED[:2]),  # U1: 3 views, then 2
        ECOMMERCE_EVENT_SCHEMA,
        tmp_path / "yesterday",
    )

    assert [batch.rows for batch in run.batches] == [
        [Row(user_id="U1", events=6, kept="(3,)")],  # handleInitialState ran first: 3 + 3
        [Row(user_id="U1", events=8, kept="(6,)")],
    ]

    def counts(df) -> list[tuple]:
        return state_reader.text_rows(df.collect(), ["key", "value"])

    # U2 never came in the stream: its count is yesterday's, put there by handleInitialState.
    assert counts(lesson.read_counts(rocksdb, checkpoint)) == [("U1", "8"), ("U2", "5")]
    assert counts(lesson.read_counts(rocksdb, checkpoint, batch_id=0)) == [("U1", "6"), ("U2", "5")]


def test_handle_initial_state_alone_with_tws_tester():
    tester = TwsTester(
        lesson.CountEvents("events INT"),
        initialStateRow=[("U2", Row(user_id="U2", events=5))],
    )

    assert tester.peekValueState("counts", "U2") == (5,)
    assert tester.test("U2", [event("view", "10:31:00")]) == [
        Row(user_id="U2", events=6, kept="(5,)")
    ]


def count_twice(spark, workdir, ttl: timedelta) -> list[list]:
    """The counts, run on REPLAYED[0] (3 views of U1), then restarted on REPLAYED[1] (2 views)
    once the clock is ``lesson.COUNT_TTL`` past the first run's end: each run's batches' rows."""
    runs = run_twice(
        spark,
        lambda events: lesson.build_event_counts(events, ttl=ttl),
        views_of_u1(lesson.REPLAYED[:2]),
        ECOMMERCE_EVENT_SCHEMA,
        workdir,
        wait_seconds=lesson.COUNT_TTL.total_seconds(),
        settings={lesson.NO_DATA_BATCHES_CONF: "false"},
    )
    assert [[batch.batch_id for batch in run.batches] for run in runs] == [[0], [1]]
    return [[batch.rows for batch in run.batches] for run in runs]


def test_a_ttl_in_processing_time_mode_expires_the_count(rocksdb, tmp_path):
    # The second batch starts more than the TTL after the first wrote the count: it is gone.
    assert count_twice(rocksdb, tmp_path / "short", lesson.COUNT_TTL) == [
        [[Row(user_id="U1", events=3, kept="None")]],
        [[Row(user_id="U1", events=2, kept="None")]],
    ]
    # The same wait with a TTL of an hour: the count is kept.
    assert count_twice(rocksdb, tmp_path / "long", timedelta(hours=1)) == [
        [[Row(user_id="U1", events=3, kept="None")]],
        [[Row(user_id="U1", events=5, kept="(3,)")]],
    ]


def new_users(run) -> list[list[tuple]]:
    return [
        [(row.window.start, row.window.end, row.new_users) for row in batch.rows]
        for batch in run.batches
    ]


def test_event_time_column_name_lets_a_window_close_after_the_processor(rocksdb, tmp_path):
    run, _ = run_afresh(
        rocksdb,
        lesson.build_new_users_per_minute,
        views_by(lesson.FIRST_VISITS),
        ECOMMERCE_EVENT_SCHEMA,
        tmp_path / "first-visits",
        output_mode="append",
    )

    # First visits: U1 10:30:05, U2 10:30:40 (batch 0), U3 10:31:20 (batch 1), U4 10:32:30
    # (batch 2). A minute is output once the watermark (newest time - 10 s) reaches its end; the
    # last batch has no data, the watermark moved.
    assert new_users(run) == [
        [],
        [],
        [(at("10:30:00"), at("10:31:00"), 2)],
        [(at("10:31:00"), at("10:32:00"), 1)],
    ]
    assert [batch.watermark[11:19] for batch in run.batches] == [
        "00:00:00",
        "10:30:40",
        "10:31:20",
        "10:32:20",
    ]


def test_without_event_time_column_name_the_window_has_no_watermark(rocksdb, tmp_path):
    write_batches(tmp_path / "in", views_by(lesson.FIRST_VISITS))
    events = stream_batches(rocksdb, tmp_path / "in", ECOMMERCE_EVENT_SCHEMA)

    with pytest.raises(Exception, match="streaming aggregations without watermark"):
        collect_batches(
            lesson.build_new_users_per_minute(events, event_time_column=""), tmp_path / "chk"
        )


def test_the_default_store_has_a_change_feed(rocksdb, tmp_path):
    changes = lesson.read_count_changes(rocksdb, lesson.DEFAULT_STORE, tmp_path)

    rows = sorted(
        (row.batch_id, row.change_type, row.key.user_id, row.value["count"])
        for row in changes.collect()
    )
    # Views of U1: 3, then 2, then 2 (REPLAYED).
    assert rows == [(0, "update", "U1", 3), (1, "update", "U1", 5), (2, "update", "U1", 7)]
    # The default store wrote N.delta files, RocksDB's changelog files there are none.
    files = {path.name for path in (tmp_path / "feed").rglob("*") if path.is_file()}
    assert "1.delta" in files
    assert not any(name.endswith(".changelog") for name in files)


def test_rocksdb_without_changelog_checkpointing_has_no_change_feed(rocksdb, tmp_path):
    no_changelog = {lesson.PROVIDER_CONF: lesson.ROCKSDB_PROVIDER, lesson.CHANGELOG_CONF: "false"}
    changes = lesson.read_count_changes(rocksdb, no_changelog, tmp_path)

    # The reader looks for N.changelog files; RocksDB wrote only snapshots (N.zip).
    with pytest.raises(Exception, match="CANNOT_READ_STREAMING_STATE_FILE"):
        changes.collect()


def test_session_conf_sets_a_conf_for_the_block_and_puts_back_what_was_there(spark):
    key = lesson.ENCODING_CONF
    spark.conf.unset(key)
    default = spark.conf.get(key)
    spark.conf.set("spark.sql.shuffle.partitions", spark.conf.get("spark.sql.shuffle.partitions"))

    with session_conf(spark, {key: "avro", "spark.sql.shuffle.partitions": "3"}):
        assert spark.conf.get(key) == "avro"
        assert spark.conf.get("spark.sql.shuffle.partitions") == "3"

    assert spark.conf.get(key) == default  # unset again: the default shows
    assert spark.conf.get("spark.sql.shuffle.partitions") != "3"


@pytest.mark.smoke
def test_lesson_runs_on_the_files_there(course_home):
    folder = course_home / "data" / "ecommerce_events"
    write_batches(folder, BATCHES)  # three files; with no simulator running, read once and stop

    result = run_script("streaming_tutorial/15_state_store.py", "--available-now", home=course_home)

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "grouped.mapGroupsWithState exists in PySpark: False" in out
    assert "[UNSUPPORTED_FEATURE.STORE_BACKEND_NOT_SUPPORTED_FOR_TWS]" in out
    assert re.search(r"\|U2 +\|closed\|1 +\|0\.0 +\|1 +\|view +\|2025-01-15 10:30:20\|", out), out[
        -3000:
    ]
    assert "stateVarName=session: 1 row\n  key  value\n  U3   2, 15.0, 10:33:00" in out
    assert "readRegisteredTimers: 1 row" in out
    assert "09: joinSide=right (clicks kept): 2 rows" in out
    assert (
        "encodingFormat=avro, after the restart: [Row(user_id='U1', events=5, kept='(3, None)')]"
        in out
    )
    assert "[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE]" in out
    assert "handleExpiredTimer cleared them" in prose(out)
    assert (
        "events per user on the default (HDFS-backed) store, readChangeFeed: what each "
        "micro-batch changed\n  batch  updated  deleted\n  0      U1       -" in out
    )
    assert (
        "'count INT' renamed 'total INT' (the default encoding), after the restart: "
        "[Row(user_id='U1', events=5, kept='(3,)')]" in out
    )
    assert "  batch 0: Row(user_id='U1', events=6, kept='(3,)')" in out
    assert "stateVarName=counts, batchId=0: 2 rows" in out
    assert "with a TTL of 1.5 s, restarted once it has passed:" in out
    assert "second run:\n  batch 1: Row(user_id='U1', events=2, kept='None')" in out
    assert (
        "  batch 2: 10:30:00-10:31:00 new users: 2\n  batch 3: 10:31:00-10:32:00 new users: 1"
        in out
    )
    assert "takes a renamed one silently" in prose(out)

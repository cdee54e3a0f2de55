"""Lesson 10: foreachBatch into a Delta table, a real SQLite database (JDBC), alert files or
Kafka.

Each test writes finite, hand-made micro-batches and checks the exact rows that land in
every destination, first time and on a replay of the same batch id. The database's replay
guard, ``apply_batch_once``, is tested on its own too. So are the two forms of
``writeStream.foreach``: the ForeachWriter's SQLite table keyed by event id, which a replayed
epoch leaves as it was however Spark splits it into partitions (where a writer that skips a
(partition, epoch) it wrote loses rows), and the function form's file per alert, which a
replay writes again with the same text.
"""

from __future__ import annotations

import json
import re

import pytest
from pyspark.sql import Row

from common import database, parsing
from common.sales import build_category_sales
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from conftest import load_lesson, run_script, shop_event, write_by_hand
from infra import checkpoints
from infra.files import json_lines, write_atomically
from infra.runner import finish

lesson = load_lesson("10_foreach_batch")

# One batch with every case: an alert (1299.99), a purchase just under the threshold
# (2 x 249.99 = 499.98), two categories, a view; plus two lines that are no usable event.
FIRST_BATCH = [
    shop_event(1, "USER-1", "view", "10:30:00", category="Electronics", price=1299.99),
    shop_event(2, "USER-1", "purchase", "10:30:05", category="Electronics", price=1299.99),
    shop_event(
        3,
        "USER-2",
        "purchase",
        "10:30:10",
        product="P003",
        category="Electronics",
        price=249.99,
        quantity=2,
    ),
    shop_event(4, "USER-3", "purchase", "10:30:20", product="P007", category="Home", price=79.99),
]
SECOND_BATCH = [
    shop_event(
        5,
        "USER-4",
        "purchase",
        "10:31:00",
        product="P009",
        category="Home",
        price=159.0,
        quantity=4,
    ),
    shop_event(6, "USER-2", "cart", "10:31:05", product="P004", category="Sports", price=89.99),
]
BROKEN_LINE = '{"event_id": "EVT-000099", "user_id": '
NO_USER = json.dumps({**shop_event(98, "USER-9", "purchase", "10:30:30"), "user_id": None})
# A table of totals for apply_batch_once on its own: each row adds its amount to a name.
TOTALS = """CREATE TABLE IF NOT EXISTS totals (
    name VARCHAR(16) PRIMARY KEY,
    amount DOUBLE PRECISION NOT NULL,
    note VARCHAR(16))"""
ADD = (
    "INSERT INTO totals (name, amount, note) VALUES (?, ?, ?) "
    "ON CONFLICT (name) DO UPDATE SET amount = totals.amount + excluded.amount"
)
# A batch that raises no alert: a view only.
NO_ALERT_BATCH = [shop_event(7, "USER-5", "view", "10:32:00", price=1299.99)]
# The alerts FIRST_BATCH and SECOND_BATCH raise, as the foreach sinks store them.
ALERT_2 = {
    "event_id": "EVT-000002",
    "user_id": "USER-1",
    "product_id": "P001",
    "product_name": "Coffee Maker",
    "quantity": 1,
    "amount": 1299.99,
    "timestamp": "2025-01-15T10:30:05.000Z",
    "rule": "purchase >= 500",
}
ALERT_5 = {
    "event_id": "EVT-000005",
    "user_id": "USER-4",
    "product_id": "P009",
    "product_name": "Coffee Maker",
    "quantity": 4,
    "amount": 636.0,
    "timestamp": "2025-01-15T10:31:00.000Z",
    "rule": "purchase >= 500",
}


def parsed_batch(spark, records, extra_lines=()):
    """A micro-batch as the lesson's reader makes it: lines of one file, parsed with a reason."""
    lines = [json.dumps(record) for record in records] + list(extra_lines)
    frame = spark.createDataFrame(
        [(line, "b.json") for line in lines], "value string, source_file string"
    )
    return parsing.parse_json(frame, ECOMMERCE_EVENT_SCHEMA)


def destinations(spark, tmp_path):
    jdbc = database.Jdbc(f"jdbc:sqlite:{tmp_path / 'out' / 'shop.db'}")
    database.create_tables(spark, jdbc, [lesson.APPLIED_BATCHES, lesson.CATEGORY_SALES])
    return {"folder": tmp_path / "out", "jdbc": jdbc}


def lines_in(folder):
    return [
        json.loads(line)
        for path in sorted(folder.glob("*.json"))
        for line in path.read_text().splitlines()
    ]


def test_the_same_batch_twice_adds_nothing_the_second_time(spark, tmp_path, capsys):
    where = destinations(spark, tmp_path)
    batch = parsed_batch(spark, FIRST_BATCH, [BROKEN_LINE, NO_USER])

    first = lesson.write_batch(batch, 0, app_id="test-app", **where)
    second = lesson.write_batch(
        batch, 0, app_id="test-app", **where
    )  # what Spark does after a crash

    assert first == {
        "events": 4,
        "delta_version": 0,
        "applied": True,
        "alerts": 1,
        "quarantined": 2,
    }
    assert second == {
        "events": 4,
        "delta_version": None,
        "applied": False,
        "alerts": 1,
        "quarantined": 2,
    }
    assert capsys.readouterr().out.splitlines() == [
        "batch 0: 4 events -> Delta v0 | 3 purchases -> database (Electronics, Home) | 1 alert | "
        "2 quarantined",
        "batch 0 (again): 4 events -> Delta skipped (txnVersion 0 already committed) | "
        "database skipped (batch 0 already applied) | 1 alert | 2 quarantined",
    ]
    events = spark.read.format("delta").load(str(tmp_path / "out" / "events"))
    assert sorted(row.event_id for row in events.collect()) == [
        "EVT-000001",
        "EVT-000002",
        "EVT-000003",
        "EVT-000004",
    ]
    outputs = lesson.read_outputs(spark, **where)
    assert outputs["sales"] == [("Electronics", 2, 3, 1799.97, 0), ("Home", 1, 1, 79.99, 0)]
    assert database.query(
        spark, where["jdbc"], "SELECT app_id, batch_id, input_rows FROM applied_batches"
    ) == [("test-app", 0, 4)]
    assert lines_in(tmp_path / "out" / "alerts") == [
        {
            "event_id": "EVT-000002",
            "user_id": "USER-1",
            "product_id": "P001",
            "product_name": "Coffee Maker",
            "quantity": 1,
            "amount": 1299.99,
            "timestamp": "2025-01-15T10:30:05.000Z",
            "rule": "purchase >= 500",
        }
    ]
    assert lines_in(tmp_path / "out" / "quarantine") == [
        {"source_file": "b.json", "reason": "not a JSON object", "raw_line": BROKEN_LINE},
        {"source_file": "b.json", "reason": "missing user_id", "raw_line": NO_USER},
    ]

    # The next batch adds to the totals (and a purchase of 4 x 159.0 = 636.0 is an alert).
    third = lesson.write_batch(parsed_batch(spark, SECOND_BATCH), 1, app_id="test-app", **where)
    assert (third["delta_version"], third["applied"], third["alerts"]) == (1, True, 1)
    assert lesson.read_outputs(spark, **where)["sales"] == [
        ("Electronics", 2, 3, 1799.97, 0),
        ("Home", 2, 5, 715.99, 1),
    ]
    assert len(lines_in(tmp_path / "out" / "alerts")) == 2


def test_a_real_replay_after_a_lost_commit_changes_nothing(spark, tmp_path, capsys):
    folder, checkpoint = tmp_path / "in", tmp_path / "chk"
    where = destinations(spark, tmp_path)  # no app_id: the streaming query's own id

    def run():
        # The lesson's reader and query: read what has arrived, then stop.
        events = lesson.read_events(spark, folder)
        query = lesson.start_batches(events, checkpoint, {"availableNow": True}, **where)
        finish([query])
        return query

    # One new file per run, so one micro-batch per file, as files arrive in the lesson.
    write_atomically(folder, "batch-0.json", json_lines(FIRST_BATCH))
    first_query = run()
    write_atomically(folder, "batch-1.json", json_lines(SECOND_BATCH))
    run()
    before = lesson.read_outputs(spark, **where)
    assert checkpoints.forget_last_commit(checkpoint) == 1
    second_query = run()

    assert second_query.id == first_query.id  # the id lives in the checkpoint: the same txnAppId
    assert capsys.readouterr().out.splitlines() == [
        "batch 0: 4 events -> Delta v0 | 3 purchases -> database (Electronics, Home) | 1 alert | "
        "0 quarantined",
        "batch 1: 2 events -> Delta v1 | 1 purchases -> database (Home) | 1 alert | 0 quarantined",
        "batch 1 (again): 2 events -> Delta skipped (txnVersion 1 already committed) | "
        "database skipped (batch 1 already applied) | 1 alert | 0 quarantined",
    ]
    after = lesson.read_outputs(spark, **where)
    assert after == before
    assert (
        after["delta_rows"],
        after["delta_versions"],
        after["applied"],
        len(after["alerts"]),
    ) == (6, 2, 2, 2)
    assert after["sales"] == [("Electronics", 2, 3, 1799.97, 0), ("Home", 2, 5, 715.99, 1)]


def test_alert_rule_and_category_sales_on_a_batch(spark):
    events = parsing.valid_records(
        parsed_batch(spark, FIRST_BATCH + SECOND_BATCH), ECOMMERCE_EVENT_SCHEMA
    )

    assert sorted(build_category_sales(events).collect()) == [
        Row(category="Electronics", purchases=2, units=3, revenue=1799.97),
        Row(category="Home", purchases=2, units=5, revenue=715.99),
    ]
    assert [
        row.event_id for row in lesson.build_alerts(events, 499.98).orderBy("event_id").collect()
    ] == ["EVT-000002", "EVT-000003", "EVT-000005"]


@pytest.fixture
def jdbc(spark, tmp_path):
    """A fresh SQLite file with the replay guard and a table of totals."""
    where = database.Jdbc(f"jdbc:sqlite:{tmp_path / 'guard.db'}")
    database.create_tables(spark, where, [lesson.APPLIED_BATCHES, TOTALS])
    return where


def test_a_batch_is_applied_once_per_app_and_batch_id(spark, jdbc):
    rows = [("a", 1.5, None), ("b", 2.0, "x")]

    assert lesson.apply_batch_once(spark, jdbc, "app", 0, ADD, rows, input_rows=7)
    assert not lesson.apply_batch_once(spark, jdbc, "app", 0, ADD, rows, input_rows=7)  # a replay
    assert lesson.apply_batch_once(spark, jdbc, "app", 1, ADD, [("a", 10.0, None)])
    assert lesson.apply_batch_once(spark, jdbc, "other-app", 0, ADD, [("b", 0.5, None)])

    assert database.query(spark, jdbc, "SELECT name, amount, note FROM totals ORDER BY name") == [
        ("a", 11.5, None),
        ("b", 2.5, "x"),
    ]
    assert database.query(
        spark,
        jdbc,
        "SELECT app_id, batch_id, input_rows FROM applied_batches ORDER BY app_id, batch_id",
    ) == [("app", 0, 7), ("app", 1, 0), ("other-app", 0, 0)]


def test_a_failing_batch_rolls_back_its_claim_and_its_rows(spark, jdbc):
    with pytest.raises(Exception, match="NOT NULL"):
        lesson.apply_batch_once(spark, jdbc, "app", 0, ADD, [("a", 1.0, None), ("b", None, None)])

    assert database.query(spark, jdbc, "SELECT COUNT(*) FROM totals") == [(0,)]
    # Nothing was claimed: the batch's replay applies it.
    assert lesson.apply_batch_once(spark, jdbc, "app", 0, ADD, [("a", 1.0, None)])
    assert database.query(spark, jdbc, "SELECT name, amount FROM totals") == [("a", 1.0)]


def test_a_value_of_an_unknown_type_is_refused_before_the_database_sees_it(spark, jdbc):
    with pytest.raises(TypeError, match="cannot bind a bytes"):
        lesson.apply_batch_once(spark, jdbc, "app", 0, ADD, [("a", b"1", None)])

    assert database.query(spark, jdbc, "SELECT COUNT(*) FROM applied_batches") == [(0,)]


def run_foreach(spark, start, folder, checkpoint, out):
    """One availableNow run of one of the lesson's foreach queries on the folder's files."""
    events = lesson.read_events(spark, folder)
    query = start(lesson.build_alert_messages(events), checkpoint, {"availableNow": True}, out)
    finish([query])
    return query


def alerts_in(files):
    """stored_files' result as {file name: [each line, parsed]}."""
    return {
        name: [json.loads(line) for line in text.splitlines()] for name, (_, text) in files.items()
    }


def alert_row(name):
    """An alert message as build_alert_messages makes it: its key, and its text."""
    return Row(key=f"EVT-{name}", value=json.dumps({"event_id": f"EVT-{name}"}))


def stored_alerts(sqlite_file):
    """read_alert_tables' result with each alert's text parsed."""
    tables = lesson.read_alert_tables(sqlite_file)
    return {key: json.loads(text) for key, text in tables["alerts"].items()}, tables["tasks"]


def test_a_foreach_writer_stores_each_alert_once_by_its_event_id(spark, tmp_path):
    folder, checkpoint, out = tmp_path / "in", tmp_path / "chk", tmp_path / "alerts.db"

    # One new file per run: one epoch per run, one partition per file.
    write_atomically(folder, "batch-0.json", json_lines(FIRST_BATCH))
    query = run_foreach(spark, lesson.start_alert_writer, folder, checkpoint, out)
    write_atomically(folder, "batch-1.json", json_lines(SECOND_BATCH))
    run_foreach(spark, lesson.start_alert_writer, folder, checkpoint, out)
    written = lesson.read_alert_tables(out)

    # Each task logged (epoch, partition, rows it got, rows that were new).
    assert stored_alerts(out) == (
        {"EVT-000002": ALERT_2, "EVT-000005": ALERT_5},
        [(0, 0, 1, 1), (1, 0, 1, 1)],
    )

    # A crash before the commit: Spark runs epoch 1 again, and its task gets its row again.
    assert checkpoints.forget_last_commit(checkpoint) == 1
    replay = run_foreach(spark, lesson.start_alert_writer, folder, checkpoint, out)
    assert replay.id == query.id
    again = lesson.read_alert_tables(out)
    assert again["alerts"] == written["alerts"]  # the same alerts, the same text
    assert again["tasks"] == [(0, 0, 1, 1), (1, 0, 1, 1), (1, 0, 1, 0)]
    assert (
        lesson.compare_alert_tables(written, again)
        == "2 -> 2 alerts, 0 changed; the replay's 1 task got 1 row, 0 new"
    )


def test_a_foreach_writer_commits_a_partition_in_close_and_only_without_an_error(tmp_path):
    sqlite_file = tmp_path / "alerts.db"
    lesson.create_alert_tables(sqlite_file)
    writer = lesson.AlertTableWriter(sqlite_file)
    rows = [alert_row("1"), alert_row("2")]

    # The task fails half-way: close() gets the error and rolls the partition back.
    write_by_hand(writer, 3, 7, rows[:1], error=RuntimeError("task failed"))
    assert stored_alerts(sqlite_file) == ({}, [])
    # Spark retries it: the rows and the task's log row commit together.
    write_by_hand(writer, 3, 7, rows)
    # Run again, with an alert of the same key and other text, and a new one: the first text
    # stays (DO NOTHING), the new alert is added.
    other_text = Row(key="EVT-1", value='{"event_id": "EVT-1", "replayed": true}')
    write_by_hand(writer, 3, 7, [other_text, alert_row("3")])

    assert stored_alerts(sqlite_file) == (
        {
            "EVT-1": {"event_id": "EVT-1"},
            "EVT-2": {"event_id": "EVT-2"},
            "EVT-3": {"event_id": "EVT-3"},
        },
        [(7, 3, 2, 2), (7, 3, 2, 1)],
    )
    # Every transaction ended: no journal left beside the database.
    assert sorted(path.name for path in tmp_path.iterdir()) == ["alerts.db"]


class SkipWrittenPartitions(lesson.AlertTableWriter):
    """The wrong idea, for contrast: open() returns False for an (epoch, partition) it logged."""

    def open(self, partition_id, epoch_id):
        super().open(partition_id, epoch_id)
        logged = self.connection.execute(
            "SELECT 1 FROM writer_tasks WHERE epoch_id = ? AND partition_id = ?",
            (epoch_id, partition_id),
        )
        return logged.fetchone() is None


def test_a_replayed_epoch_split_otherwise_loses_no_alert_keyed_by_event_id(tmp_path):
    # What Spark may do (its ForeachWriter docs, SPARK-28650): epoch 0 runs as two partitions,
    # then, replayed on other cores or with another file split, as one.
    a, b, c, d = (alert_row(name) for name in "ABCD")
    every_alert = {f"EVT-{name}": {"event_id": f"EVT-{name}"} for name in "ABCD"}
    keyed, guarded, both = (tmp_path / name for name in ("keyed.db", "guarded.db", "both.db"))
    for sqlite_file in (keyed, guarded, both):
        lesson.create_alert_tables(sqlite_file)

    # Partition 0 commits; partition 1 fails (a kill), so epoch 0 is replayed in one partition.
    for writer in (lesson.AlertTableWriter(keyed), SkipWrittenPartitions(guarded)):
        write_by_hand(writer, 0, 0, [a, b])
        write_by_hand(writer, 1, 0, [c], error=RuntimeError("executor lost"))
        write_by_hand(writer, 0, 0, [a, b, c, d])

    assert stored_alerts(keyed) == (every_alert, [(0, 0, 2, 2), (0, 0, 4, 2)])
    # The guard found (epoch 0, partition 0) written and skipped it: C and D are lost.
    assert stored_alerts(guarded) == (
        {"EVT-A": {"event_id": "EVT-A"}, "EVT-B": {"event_id": "EVT-B"}},
        [(0, 0, 2, 2), (0, 0, 0, 0)],
    )

    # Both partitions committed, then the epoch replayed in one: each alert once.
    writer = lesson.AlertTableWriter(both)
    write_by_hand(writer, 0, 0, [a, b])
    write_by_hand(writer, 1, 0, [c, d])
    write_by_hand(writer, 0, 0, [a, b, c, d])
    assert stored_alerts(both) == (every_alert, [(0, 0, 2, 2), (0, 1, 2, 2), (0, 0, 4, 0)])


def test_the_foreach_function_writes_a_file_per_alert_and_a_replay_writes_them_again(
    spark, tmp_path
):
    folder, checkpoint, out = tmp_path / "in", tmp_path / "chk", tmp_path / "out"
    write_atomically(folder, "batch-0.json", json_lines(FIRST_BATCH))
    write_atomically(folder, "batch-1.json", json_lines(SECOND_BATCH + NO_ALERT_BATCH))

    run_foreach(spark, lesson.start_alerts_by_function, folder, checkpoint, out)
    written = lesson.stored_files(out)
    assert alerts_in(written) == {"EVT-000002.json": [ALERT_2], "EVT-000005.json": [ALERT_5]}

    # Both files were one epoch: its replay calls the function for every alert again.
    assert checkpoints.forget_last_commit(checkpoint) == 0
    run_foreach(spark, lesson.start_alerts_by_function, folder, checkpoint, out)
    again = lesson.stored_files(out)
    assert (
        lesson.compare_files(written, again) == "2 -> 2 files, 2 written again, 0 with other text"
    )
    assert alerts_in(again) == alerts_in(written)  # keyed by event id: no alert twice


@pytest.mark.kafka
@pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning")
def test_alerts_can_go_to_a_kafka_topic_keyed_by_event_id(spark, kafka_bootstrap, topic, tmp_path):
    from infra.kafka import consume_all, ensure_topics

    alerts = topic("alerts")
    ensure_topics(kafka_bootstrap, [alerts])
    where = destinations(spark, tmp_path)
    batch = parsed_batch(spark, FIRST_BATCH + SECOND_BATCH)

    report = lesson.write_batch(
        batch, 0, app_id="kafka-app", bootstrap=kafka_bootstrap, topic=alerts, **where
    )
    lesson.write_batch(
        batch, 0, app_id="kafka-app", bootstrap=kafka_bootstrap, topic=alerts, **where
    )  # a replay

    assert report["alerts"] == 2
    # At-least-once: the replay sent both alerts again, with the same keys to drop them by.
    records = consume_all(kafka_bootstrap, alerts)
    assert sorted((r.key.decode(), json.loads(r.value)["amount"]) for r in records) == [
        ("EVT-000002", 1299.99),
        ("EVT-000002", 1299.99),
        ("EVT-000005", 636.0),
        ("EVT-000005", 636.0),
    ]
    assert not (tmp_path / "out" / "alerts").exists()  # alerts went to Kafka, not to files


@pytest.mark.smoke
def test_lesson_10_runs_by_itself(course_home):
    result = run_script(
        "streaming_tutorial/10_foreach_batch.py", "--duration", "3", home=course_home, timeout=600
    )

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "Checkpoints: none yet" in out and "Started the ecommerce simulator" in out
    assert re.search(
        r"^batch 0: \d+ events -> Delta v0 \| \d+ purchases -> database", out, re.MULTILINE
    )
    assert "  category     purchases  units  revenue  last_batch" in out
    assert re.search(r"^applied_batches: [1-9]\d* batch ids recorded$", out, re.MULTILINE)
    assert re.search(
        r"^batch (\d+) \(again\): \d+ events -> Delta skipped \(txnVersion \1 already committed\) "
        r"\| database skipped \(batch \1 already applied\)",
        out,
        re.MULTILINE,
    )
    counts = re.search(
        r"Delta rows: (\d+) -> (\d+); database purchases: (\d+) -> (\d+); "
        r"alert lines: (\d+) -> (\d+)",
        out,
    )
    assert counts and counts[1] == counts[2] and counts[3] == counts[4] and counts[5] == counts[6]
    # Section 4: writeStream.foreach, both forms, and a replayed epoch.
    writer = re.search(
        r"^ForeachWriter -> \S*alerts_foreach_writer\.db: (\d+) alerts, one row per event id$",
        out,
        re.MULTILINE,
    )
    function = re.search(
        r"^Function form -> \S*alerts_foreach_function: (\d+) files, one per alert$",
        out,
        re.MULTILINE,
    )
    assert writer and function and writer[1] == function[1]
    tasks = re.search(r"^  epoch  partition  rows  new\n((?:  \d.*\n)+)", out, re.MULTILINE)
    # Section 4 shows the newest epoch's tasks: on a first run, epoch 0, with every alert.
    logged = [[int(cell) for cell in line.split()] for line in tasks[1].splitlines()]
    assert {row[0] for row in logged} == {0}
    assert [row[1] for row in logged] == list(range(len(logged)))
    assert sum(row[2] for row in logged) == sum(row[3] for row in logged) == int(writer[1])
    assert re.search(
        r"^Deleted the last commit of both foreach queries: to Spark, epoch 0 never finished\.$",
        out,
        re.MULTILINE,
    )
    # A first run reads every file in one epoch: its replay gets every alert again, in as many
    # tasks as the first run, and stores none twice; the function form writes every file again.
    alerts = function[1]
    task_word = "task" if len(logged) == 1 else "tasks"
    row_word = "row" if alerts == "1" else "rows"
    assert (
        f"ForeachWriter: {alerts} -> {alerts} alerts, 0 changed; "
        f"the replay's {len(logged)} {task_word} got {alerts} {row_word}, 0 new" in out
    )
    assert (
        f"Function form: {alerts} -> {alerts} files, {alerts} written again, 0 with other text"
        in out
    )

"""Lesson 11: Delta Lake as a streaming sink (append, complete) and source (aggregation, MERGE).

Every test runs the lesson's queries on finite, hand-made input (availableNow, one micro-batch
per file) and checks the exact rows and versions of real Delta tables.
"""

from __future__ import annotations

import json
import re

import pytest
from delta.tables import DeltaTable
from pyspark.sql import Row

from common.sales import build_category_sales
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from conftest import at, load_lesson, run_script, shop_event
from infra.files import json_lines, write_atomically
from infra.runner import finish
from teaching import demos
from teaching.microbatch import stream_batches, write_batches

lesson = load_lesson("11_delta_lake")

# Three micro-batches of shop events: purchases in two categories, views, a repeat user.
SHOP_BATCHES = [
    [
        shop_event(1, "USER-1", "view", "10:30:00", category="Electronics", price=100.0),
        shop_event(2, "USER-1", "purchase", "10:30:05", category="Electronics", price=100.0),
    ],
    [
        shop_event(
            3,
            "USER-2",
            "purchase",
            "10:31:00",
            product="P007",
            category="Home",
            price=20.0,
            quantity=2,
        ),
        shop_event(
            4,
            "USER-3",
            "purchase",
            "10:31:10",
            product="P002",
            category="Electronics",
            price=50.0,
            quantity=3,
        ),
        shop_event(5, "USER-1", "cart", "10:31:20", product="P008", category="Home", price=35.0),
    ],
    [shop_event(6, "USER-2", "purchase", "10:32:00", product="P008", category="Home", price=5.5)],
]
BROKEN_LINE = '{"event_id": "EVT-000099", "user_id": '


def test_complete_mode_delta_sink_holds_exactly_the_current_totals(spark, tmp_path):
    write_batches(tmp_path / "in", SHOP_BATCHES)
    sales = build_category_sales(stream_batches(spark, tmp_path / "in", ECOMMERCE_EVENT_SCHEMA))
    table = tmp_path / "sales"

    finish([lesson.start_complete(sales, "delta", table, tmp_path / "chk")])

    def totals(reader):
        return sorted(reader.load(str(table)).collect())

    assert totals(spark.read.format("delta")) == [
        Row(category="Electronics", purchases=2, units=4, revenue=250.0),
        Row(category="Home", purchases=2, units=3, revenue=45.5),
    ]
    history = DeltaTable.forPath(spark, str(table)).history().orderBy("version").collect()
    assert [(h.version, h.operation, h.operationParameters["outputMode"]) for h in history] == [
        (0, "STREAMING UPDATE", "Complete"),
        (1, "STREAMING UPDATE", "Complete"),
        (2, "STREAMING UPDATE", "Complete"),
    ]
    # Each version held the complete result of its moment, replaced by the next.
    assert totals(spark.read.format("delta").option("versionAsOf", 0)) == [
        Row(category="Electronics", purchases=1, units=1, revenue=100.0)
    ]
    assert totals(spark.read.format("delta").option("versionAsOf", 1)) == [
        Row(category="Electronics", purchases=2, units=4, revenue=250.0),
        Row(category="Home", purchases=1, units=2, revenue=40.0),
    ]


def test_a_parquet_sink_refuses_complete_mode(spark, tmp_path, capsys):
    write_batches(tmp_path / "in", SHOP_BATCHES[:1])
    sales = build_category_sales(stream_batches(spark, tmp_path / "in", ECOMMERCE_EVENT_SCHEMA))

    message = demos.show_refusal(
        lambda: lesson.start_complete(sales, "parquet", tmp_path / "out", tmp_path / "chk"),
        "Complete mode into a parquet sink",
    )

    assert "Invalid streaming output mode: complete" in message and "parquet" in message
    assert capsys.readouterr().out.startswith(
        "Complete mode into a parquet sink fails:\n  [STREAMING_OUTPUT_MODE.UNSUPPORTED_DATASOURCE]"
    )
    assert not (tmp_path / "out").exists()


def test_append_sink_is_exactly_once_across_restarts_and_time_travel_reads_each_version(
    spark, tmp_path
):
    folder, table, checkpoint = tmp_path / "in", tmp_path / "events", tmp_path / "chk"

    def run_once():
        # The lesson's reader and query: read what has arrived, then stop.
        events = lesson.read_events(spark, folder)
        finish([lesson.start_events(events, table, checkpoint, {"availableNow": True})])
        return lesson.read_counts(spark, table)

    # One new file per run, so one micro-batch (one table version) per file.
    write_atomically(folder, "first.json", json_lines(SHOP_BATCHES[0]))
    assert run_once() == (2, 2)
    second = SHOP_BATCHES[1] + [{"event_id": "EVT-000098"}]  # no user_id: quarantined
    write_atomically(folder, "second.json", json_lines(second))
    assert run_once() == (5, 5)
    assert run_once() == (5, 5)  # a restart on the same checkpoint: nothing read twice
    write_atomically(folder, "later.json", json_lines(SHOP_BATCHES[2]))  # newer than the others
    assert run_once() == (6, 6)  # only the new file

    history = DeltaTable.forPath(spark, str(table)).history().orderBy("version").collect()
    assert [(h.version, h.operation, h.operationParameters.get("epochId")) for h in history] == [
        (0, "CREATE TABLE", None),
        (1, "STREAMING UPDATE", "0"),
        (2, "STREAMING UPDATE", "1"),
        (3, "STREAMING UPDATE", "2"),
    ]
    assert lesson.read_versions(spark, table) == [(0, 0), (1, 2), (3, 6)]
    assert lesson.read_version(spark, table, 2) == (2, 5)
    assert [
        (row.version, row.epochId, row.numOutputRows)
        for row in lesson.read_history(spark, table).collect()
    ] == [(0, None, None), (1, "0", "2"), (2, "1", "3"), (3, "2", "1")]


def test_unusable_lines_go_to_the_quarantine_table_with_their_reason(spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "mixed.json").write_text(
        json_lines(SHOP_BATCHES[0])
        + BROKEN_LINE
        + "\n"
        + json.dumps({"event_id": "EVT-000098"})
        + "\n"
    )

    finish(
        [
            lesson.start_quarantine(
                lesson.read_events(spark, folder),
                tmp_path / "quarantine",
                tmp_path / "chk",
                {"availableNow": True},
            )
        ]
    )

    rows = spark.read.format("delta").load(str(tmp_path / "quarantine")).collect()
    assert sorted(rows) == sorted(
        [
            Row(source_file="mixed.json", reason="not a JSON object", raw_line=BROKEN_LINE),
            Row(
                source_file="mixed.json",
                reason="missing user_id",
                raw_line='{"event_id": "EVT-000098"}',
            ),
        ]
    )


def test_delta_source_feeds_a_merge_that_upserts_the_latest_event_per_user(spark, tmp_path):
    events_table, users, checkpoint = tmp_path / "events", tmp_path / "users", tmp_path / "chk"

    def append_events(records):
        rows = [{**record, "timestamp": at(record["timestamp"][11:19])} for record in records]
        spark.createDataFrame(rows, ECOMMERCE_EVENT_SCHEMA).write.format("delta").mode(
            "append"
        ).save(str(events_table))

    def run_merge_query():
        finish(
            [
                lesson.start_user_merge(
                    lesson.read_delta_stream(spark, events_table), users, checkpoint
                )
            ]
        )
        return sorted(spark.read.format("delta").load(str(users)).collect())

    def user(user_id, event, kind, product, time_of_day):
        return Row(
            user_id=user_id,
            last_event_id=f"EVT-{event:06d}",
            last_event_type=kind,
            last_product_id=product,
            last_seen=at(time_of_day),
        )

    append_events(SHOP_BATCHES[0] + SHOP_BATCHES[1])
    assert run_merge_query() == [
        user("USER-1", 5, "cart", "P008", "10:31:20"),
        user("USER-2", 3, "purchase", "P007", "10:31:00"),
        user("USER-3", 4, "purchase", "P002", "10:31:10"),
    ]

    # New commits: USER-2 moves on, USER-4 is new, and a late event of USER-1 (older than
    # what the table holds) must not move USER-1 back in time.
    append_events(
        SHOP_BATCHES[2]
        + [
            shop_event(7, "USER-4", "view", "10:32:30", product="P003"),
            shop_event(8, "USER-1", "view", "10:29:00", product="P004"),
        ]
    )
    expected = [
        user("USER-1", 5, "cart", "P008", "10:31:20"),
        user("USER-2", 6, "purchase", "P008", "10:32:00"),
        user("USER-3", 4, "purchase", "P002", "10:31:10"),
        user("USER-4", 7, "view", "P003", "10:32:30"),
    ]
    assert run_merge_query() == expected
    assert DeltaTable.forPath(spark, str(users)).history(1).collect()[0].operation == "MERGE"

    # Replaying a batch (what foreachBatch does after a crash) changes nothing.
    lesson.write_latest_per_user(spark.read.format("delta").load(str(events_table)), users)
    assert sorted(spark.read.format("delta").load(str(users)).collect()) == expected


def test_a_table_changed_in_place_streams_only_through_its_change_data_feed(spark, tmp_path):
    table = tmp_path / "users"
    spark.sql(
        f"CREATE TABLE delta.`{table}` (user_id STRING, visits INT) USING delta "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )  # version 0
    spark.sql(f"INSERT INTO delta.`{table}` VALUES ('U1', 1), ('U2', 1)")  # version 1
    spark.sql(
        f"MERGE INTO delta.`{table}` AS t USING (SELECT 'U1' AS user_id) AS s "
        "ON t.user_id = s.user_id WHEN MATCHED THEN UPDATE SET visits = t.visits + 1"
    )  # version 2: U1 updated in place

    def stream(name, **options):
        reader = spark.readStream.format("delta")
        for option, value in options.items():
            reader = reader.option(option, value)
        rows = []
        query = (
            reader.load(str(table))
            .writeStream.foreachBatch(lambda batch, _: rows.extend(batch.collect()))
            .option("checkpointLocation", str(tmp_path / name))
            .trigger(availableNow=True)
            .start()
        )
        finish([query])
        return rows

    # A plain Delta source from the start: the MERGE's commit rewrote rows, and it stops there.
    with pytest.raises(Exception, match="DELTA_SOURCE_TABLE_IGNORE_CHANGES"):
        stream("plain", startingVersion=0)
    # skipChangeCommits: the MERGE's commit is skipped, so U1's second visit never comes.
    skipped = stream("skip", startingVersion=0, skipChangeCommits="true")
    assert sorted((row.user_id, row.visits) for row in skipped) == [("U1", 1), ("U2", 1)]
    # The change data feed from version 0: each change once, with its type and version.
    changes = stream("changes", startingVersion=0, readChangeFeed="true")
    assert sorted(
        (row._commit_version, row._change_type, row.user_id, row.visits) for row in changes
    ) == [
        (1, "insert", "U1", 1),
        (1, "insert", "U2", 1),
        (2, "update_postimage", "U1", 2),
        (2, "update_preimage", "U1", 1),
    ]
    # A new query without startingVersion: the table as it is now, every row an insert.
    snapshot = stream("snapshot", readChangeFeed="true")
    assert sorted((row._change_type, row.user_id, row.visits) for row in snapshot) == [
        ("insert", "U1", 2),
        ("insert", "U2", 1),
    ]


@pytest.mark.smoke
def test_lesson_11_runs_by_itself(course_home):
    result = run_script(
        "streaming_tutorial/11_delta_lake.py", "--duration", "3", home=course_home, timeout=600
    )

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "Checkpoints: none yet" in out and "Started the ecommerce simulator" in out
    assert re.search(r"^  a batch read sees version [1-9]\d*: [1-9]\d* rows$", out, re.MULTILINE)
    assert re.search(
        r"^  before the restart: (\d+) rows \(\1 distinct event ids\); "
        r"after it: \d+ new rows -> (\d+) rows \(\2 distinct event ids\)$",
        out,
        re.MULTILINE,
    )
    assert (
        "Complete mode into a parquet sink fails:\n  [STREAMING_OUTPUT_MODE.UNSUPPORTED_DATASOURCE]"
        in out
    )
    assert "|category   |purchases|units|revenue|" in out
    assert "|0      |CREATE TABLE    |NULL      |NULL   |NULL         |" in out
    assert re.search(r"^  version 0: 0 rows; .* \(the latest\)$", out, re.MULTILINE)
    assert re.search(r"^[1-9]\d* users in .*user_last_event$", out, re.MULTILINE)

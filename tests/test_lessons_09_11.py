"""Lessons 09-11: stream joins, foreachBatch into Delta + a real JDBC database, Delta Lake.

Every test runs real queries on finite, hand-written input (one file per micro-batch,
availableNow) and checks the exact rows that land in real Delta tables, a real SQLite
database (through the JVM's JDBC driver) and a real Kafka broker.
"""

from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime, timedelta

import pytest
from delta.tables import DeltaTable
from pyspark.sql import Row

from common.files import json_lines, write_atomically
from common.microbatch import collect_batches, stream_batches, write_batches
from common.schemas import CLICK_SCHEMA, ECOMMERCE_EVENT_SCHEMA, IMPRESSION_SCHEMA
from conftest import load_lesson, run_script

delta_lesson = load_lesson("11_delta_lake")


def shop_event(number: int, user: str, kind: str, product: str, category: str, price: float, quantity: int,
               time_of_day: str) -> dict:
    return {
        "event_id": f"EVT-{number:06d}",
        "user_id": user,
        "event_type": kind,
        "product_id": product,
        "product_name": f"name of {product}",
        "category": category,
        "price": price,
        "quantity": quantity,
        "timestamp": f"2025-01-15T{time_of_day}.000Z",
    }


def at(time_of_day: str) -> datetime:
    return datetime.fromisoformat(f"2025-01-15T{time_of_day}")


# Three micro-batches of shop events: purchases in two categories, views, a repeat user.
SHOP_BATCHES = [
    [
        shop_event(1, "USER-1", "view", "P001", "Electronics", 100.0, 1, "10:30:00"),
        shop_event(2, "USER-1", "purchase", "P001", "Electronics", 100.0, 1, "10:30:05"),
    ],
    [
        shop_event(3, "USER-2", "purchase", "P007", "Home", 20.0, 2, "10:31:00"),
        shop_event(4, "USER-3", "purchase", "P002", "Electronics", 50.0, 3, "10:31:10"),
        shop_event(5, "USER-1", "cart", "P008", "Home", 35.0, 1, "10:31:20"),
    ],
    [shop_event(6, "USER-2", "purchase", "P008", "Home", 5.5, 1, "10:32:00")],
]


def write_one_more_file(folder, name: str, records: list[dict]) -> None:
    """A file the file source sees after the ones write_batches wrote (newer mtime)."""
    path = write_atomically(folder, name, json_lines(records))
    now = time.time()
    os.utime(path, (now, now))


# ---------------------------------------------------------------- lesson 11: Delta Lake


def test_complete_mode_delta_sink_holds_exactly_the_current_totals(spark, tmp_path):
    write_batches(tmp_path / "in", SHOP_BATCHES)
    sales = delta_lesson.build_sales_by_category(stream_batches(spark, tmp_path / "in", ECOMMERCE_EVENT_SCHEMA))
    table = tmp_path / "sales"

    delta_lesson.finish(delta_lesson.start_sales_to_delta(sales, table, tmp_path / "chk"))

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


def test_a_parquet_sink_refuses_complete_mode(spark, tmp_path):
    write_batches(tmp_path / "in", SHOP_BATCHES[:1])
    sales = delta_lesson.build_sales_by_category(stream_batches(spark, tmp_path / "in", ECOMMERCE_EVENT_SCHEMA))

    message = delta_lesson.explain_parquet_complete_failure(sales, tmp_path / "chk")

    assert "complete" in message and "parquet" in message
    assert not (tmp_path / "chk" / "never_written").exists()


def test_append_sink_is_exactly_once_across_restarts_and_time_travel_reads_each_version(spark, tmp_path):
    folder, table, checkpoint = tmp_path / "in", tmp_path / "events", tmp_path / "chk"
    write_batches(folder, SHOP_BATCHES[:2])
    delta_lesson.create_events_table(spark, table)

    def run_once():
        events = stream_batches(spark, folder, ECOMMERCE_EVENT_SCHEMA)
        delta_lesson.finish(delta_lesson.start_events_to_delta(events, table, checkpoint, available_now=True))
        return delta_lesson.count_rows(spark, table)

    assert run_once() == (5, 5)
    assert run_once() == (5, 5)  # a restart on the same checkpoint: nothing read twice
    write_one_more_file(folder, "later.json", SHOP_BATCHES[2])
    assert run_once() == (6, 6)  # only the new file

    history = DeltaTable.forPath(spark, str(table)).history().orderBy("version").collect()
    assert [(h.version, h.operation, h.operationParameters.get("epochId")) for h in history] == [
        (0, "CREATE TABLE", None),
        (1, "STREAMING UPDATE", "0"),
        (2, "STREAMING UPDATE", "1"),
        (3, "STREAMING UPDATE", "2"),
    ]

    def ids(version):
        rows = spark.read.format("delta").option("versionAsOf", version).load(str(table)).collect()
        return sorted(row.event_id for row in rows)

    assert ids(0) == []
    assert ids(1) == ["EVT-000001", "EVT-000002"]
    assert ids(2) == ["EVT-000001", "EVT-000002", "EVT-000003", "EVT-000004", "EVT-000005"]
    assert delta_lesson.table_version(spark, table) == 3


def test_delta_source_feeds_a_merge_that_upserts_the_latest_event_per_user(spark, tmp_path):
    events_table, users, checkpoint = tmp_path / "events", tmp_path / "users", tmp_path / "chk"
    delta_lesson.create_events_table(spark, events_table)

    def append_events(records):
        spark.createDataFrame(
            [
                {**record, "timestamp": datetime.fromisoformat(record["timestamp"].replace("Z", ""))}
                for record in records
            ],
            ECOMMERCE_EVENT_SCHEMA,
        ).write.format("delta").mode("append").save(str(events_table))

    def run_merge_query():
        stream = delta_lesson.read_delta_stream(spark, events_table)
        delta_lesson.finish(delta_lesson.start_user_merge(stream, users, checkpoint))
        return sorted(spark.read.format("delta").load(str(users)).collect())

    append_events(SHOP_BATCHES[0] + SHOP_BATCHES[1])
    assert run_merge_query() == [
        Row(user_id="USER-1", last_event_id="EVT-000005", last_event_type="cart",
            last_product_id="P008", last_seen=at("10:31:20")),
        Row(user_id="USER-2", last_event_id="EVT-000003", last_event_type="purchase",
            last_product_id="P007", last_seen=at("10:31:00")),
        Row(user_id="USER-3", last_event_id="EVT-000004", last_event_type="purchase",
            last_product_id="P002", last_seen=at("10:31:10")),
    ]

    # New commits: USER-2 moves on, USER-4 is new, and a late event of USER-1 (older than
    # what the table holds) must not move USER-1 back in time.
    append_events(SHOP_BATCHES[2] + [
        shop_event(7, "USER-4", "view", "P003", "Electronics", 249.99, 1, "10:32:30"),
        shop_event(8, "USER-1", "view", "P004", "Sports", 89.99, 1, "10:29:00"),
    ])
    expected = [
        Row(user_id="USER-1", last_event_id="EVT-000005", last_event_type="cart",
            last_product_id="P008", last_seen=at("10:31:20")),
        Row(user_id="USER-2", last_event_id="EVT-000006", last_event_type="purchase",
            last_product_id="P008", last_seen=at("10:32:00")),
        Row(user_id="USER-3", last_event_id="EVT-000004", last_event_type="purchase",
            last_product_id="P002", last_seen=at("10:31:10")),
        Row(user_id="USER-4", last_event_id="EVT-000007", last_event_type="view",
            last_product_id="P003", last_seen=at("10:32:30")),
    ]
    assert run_merge_query() == expected
    # The Delta source read only the new commit: the second run processed 3 rows.
    assert DeltaTable.forPath(spark, str(users)).history(1).collect()[0].operation == "MERGE"

    # Replaying a batch (what foreachBatch does after a crash) changes nothing.
    delta_lesson.merge_latest_per_user(spark, users, spark.read.format("delta").load(str(events_table)))
    assert sorted(spark.read.format("delta").load(str(users)).collect()) == expected


def test_latest_per_user_keeps_one_row_per_user(spark):
    batch = spark.createDataFrame(
        [
            {**e, "timestamp": datetime.fromisoformat(e["timestamp"].replace("Z", ""))}
            for e in SHOP_BATCHES[0] + SHOP_BATCHES[1]
        ],
        ECOMMERCE_EVENT_SCHEMA,
    )

    latest = sorted(delta_lesson.build_latest_per_user(batch).collect())

    assert [(row.user_id, row.last_event_id) for row in latest] == [
        ("USER-1", "EVT-000005"), ("USER-2", "EVT-000003"), ("USER-3", "EVT-000004")
    ]


@pytest.mark.smoke
def test_lesson_11_runs_by_itself(course_home):
    result = run_script("streaming_tutorial/11_delta_lake.py", home=course_home, timeout=600)

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "Started the ecommerce simulator" in out
    assert "restart 2 on the same checkpoint: 0 new rows" in out
    assert "Invalid streaming output mode: complete" in out
    assert "|category" in out and "STREAMING UPDATE" in out and "CREATE TABLE" in out
    assert "version 0: 0 rows" in out
    assert re.search(r"^[1-9]\d* users in .*user_last_event$", out, re.MULTILINE)


# ---------------------------------------------------------------- lesson 09: stream joins

join_lesson = load_lesson("09_stream_joins")
SCENARIO_WATERMARKS = [
    "1970-01-01T00:00:00.000Z",
    "2025-01-15T10:00:00.000Z",
    "2025-01-15T10:03:00.000Z",
    "2025-01-15T10:18:00.000Z",
    "2025-01-15T10:28:00.000Z",
]


def scenario_join(spark, tmp_path, how):
    impressions, clicks = join_lesson.scenario_records()
    write_batches(tmp_path / "impressions", impressions)
    write_batches(tmp_path / "clicks", clicks)
    joined = join_lesson.build_ad_join(stream_batches(spark, tmp_path / "impressions", IMPRESSION_SCHEMA),
                                       stream_batches(spark, tmp_path / "clicks", CLICK_SCHEMA), how)
    return collect_batches(joined, tmp_path / f"chk_{how}", sort_key=lambda row: row.impression_id)


def joined_row(impression, ad, impression_time, click=None, click_time=None):
    return Row(impression_id=impression, ad_id=ad, user_id="USER-001", impression_time=at(impression_time),
               click_id=click, click_time=at(click_time) if click_time else None)


def test_inner_join_matches_only_clicks_within_the_time_bound(spark, tmp_path):
    run = scenario_join(spark, tmp_path, "inner")

    assert [batch.rows for batch in run.batches] == [
        [joined_row("IMP-1", "AD-1", "10:00:00", "CLK-1", "10:03:00")],
        [],
        [],
        [joined_row("IMP-5", "AD-1", "10:30:00", "CLK-5", "10:31:00")],
        [],
    ]
    assert [batch.watermark for batch in run.batches] == SCENARIO_WATERMARKS


def test_left_outer_join_emits_unmatched_impressions_once_the_watermark_passes(spark, tmp_path):
    run = scenario_join(spark, tmp_path, "left_outer")

    # Batch 3 is the first whose watermark (10:18, the clicks' one: the minimum) is more
    # than 10 minutes past IMP-2, IMP-3 and IMP-4: only then can no click come for them.
    assert [batch.rows for batch in run.batches] == [
        [joined_row("IMP-1", "AD-1", "10:00:00", "CLK-1", "10:03:00")],
        [],
        [],
        [
            joined_row("IMP-2", "AD-2", "10:01:00"),
            joined_row("IMP-3", "AD-1", "10:02:00"),  # its click came 18 minutes later: no match
            joined_row("IMP-4", "AD-2", "10:05:00"),
            joined_row("IMP-5", "AD-1", "10:30:00", "CLK-5", "10:31:00"),
        ],
        [],
    ]
    assert [batch.watermark for batch in run.batches] == SCENARIO_WATERMARKS

    everything = spark.createDataFrame(run.rows())
    assert join_lesson.build_ctr_per_ad(everything).collect() == [
        Row(ad_id="AD-1", impressions=3, clicks=2, ctr_percent=66.7),
        Row(ad_id="AD-2", impressions=2, clicks=0, ctr_percent=0.0),
    ]
    # Only impressions older than the last watermark minus the click window are final.
    assert join_lesson.build_ctr_per_ad(everything, at("10:08:00")).collect() == [
        Row(ad_id="AD-1", impressions=2, clicks=1, ctr_percent=50.0),
        Row(ad_id="AD-2", impressions=2, clicks=0, ctr_percent=0.0),
    ]


def test_an_outer_join_without_watermarks_is_refused(spark, tmp_path):
    impressions, clicks = join_lesson.scenario_records()
    write_batches(tmp_path / "impressions", impressions)
    write_batches(tmp_path / "clicks", clicks)

    message = join_lesson.explain_outer_join_without_watermark(spark, tmp_path, tmp_path / "chk")

    assert "not supported without a watermark" in message


def generated_ads(count):
    """The ad generator's events with a fixed base time, and the pairs the join must find."""
    from data_generators.generate_ad_events import make_ad_events

    impressions, clicks = make_ad_events(count, base_time=BASE_TIME)
    shown = {i["impression_id"]: datetime.fromisoformat(i["impression_time"][:-1]) for i in impressions}
    in_bound = {
        (c["impression_id"], c["click_id"])
        for c in clicks
        if (datetime.fromisoformat(c["click_time"][:-1]) - shown[c["impression_id"]]).total_seconds() <= 600
    }
    return impressions, clicks, shown, in_bound


BASE_TIME = datetime.fromisoformat("2025-01-15T10:30:00+00:00")


def test_live_file_join_finds_every_click_within_the_bound_and_no_other(spark, tmp_path):
    from data_generators.generate_ad_events import make_ad_timeline, split_into_files

    count = 80
    impressions, clicks, shown, in_bound = generated_ads(count)
    assert 0 < len(in_bound) < len(clicks)  # the generator makes some clicks outside the bound
    chunks = split_into_files(make_ad_timeline(count, base_time=BASE_TIME), BASE_TIME, 20, count)
    write_batches(tmp_path / "ads" / "impressions", [chunk[0] for chunk in chunks])
    write_batches(tmp_path / "ads" / "clicks", [chunk[1] + ([] if n else [{"click_id": "broken"}]) for n, chunk in
                                                enumerate(chunks)])
    # The lesson's own readers, one file per micro-batch so the watermark moves in steps.
    impression_lines, click_lines = (
        spark.readStream.option("maxFilesPerTrigger", 1).text(str(tmp_path / "ads" / kind))
        for kind in ("impressions", "clicks")
    )
    joined = join_lesson.build_ad_join(
        join_lesson.parse_records(impression_lines, IMPRESSION_SCHEMA, "impression_id", "impression_time"),
        join_lesson.parse_records(click_lines, CLICK_SCHEMA, "click_id", "click_time"),
    )

    run = collect_batches(joined, tmp_path / "chk")

    matched = {(row.impression_id, row.click_id) for row in run.rows() if row.click_id}
    assert matched == in_bound
    final_watermark = datetime.fromisoformat(run.batches[-1].watermark[:-1])
    clicked = {impression for impression, _ in in_bound}
    unmatched = sorted(row.impression_id for row in run.rows() if row.click_id is None)
    assert unmatched == sorted(
        impression for impression, moment in shown.items()
        if impression not in clicked and moment + timedelta(minutes=10) < final_watermark
    )
    assert len(run.rows()) == len(matched) + len(unmatched)  # every impression at most once


def test_malformed_ad_records_go_to_the_quarantine(spark):
    good = json_lines([{"impression_id": "IMP-1", "ad_id": "AD-1", "user_id": "U",
                        "impression_time": "2025-01-15T10:00:00.000Z"}]).strip()
    lines = spark.createDataFrame([(good,), ('{"impression_id": "IMP-2", "ad_id"',), ('{"ad_id": "AD-3"}',)],
                                  "value string")

    parsed = join_lesson.parse_records(lines, IMPRESSION_SCHEMA, "impression_id", "impression_time").collect()
    bad = join_lesson.build_malformed(lines, IMPRESSION_SCHEMA, "impression_id", "impression_time",
                                      "impression").collect()

    assert [row.impression_id for row in parsed] == ["IMP-1"]
    assert sorted(row.value for row in bad) == ['{"ad_id": "AD-3"}', '{"impression_id": "IMP-2", "ad_id"']
    assert {row.kind for row in bad} == {"impression"}


def test_stream_static_join_enriches_each_event_and_rereads_the_catalogue_every_batch(spark, tmp_path):
    catalogue = tmp_path / "catalogue"
    catalogue.mkdir()
    (catalogue / "products.csv").write_text("product_id,product_name,category,list_price\nP001,Laptop,Electronics,10.0\n")
    events_dir = tmp_path / "events"
    events_dir.mkdir()
    enriched = join_lesson.build_enriched_events(
        spark.readStream.schema(ECOMMERCE_EVENT_SCHEMA).json(str(events_dir)),
        join_lesson.read_products(spark, catalogue),
    )
    seen = []
    query = (
        enriched.writeStream.foreachBatch(lambda batch, batch_id: seen.append(sorted(batch.collect())))
        .option("checkpointLocation", str(tmp_path / "chk"))
        .start()
    )
    try:
        write_one_more_file(events_dir, "a.json", [shop_event(1, "U1", "view", "P001", "?", 9.5, 1, "10:30:00"),
                                                   shop_event(2, "U2", "view", "P999", "?", 5.0, 2, "10:30:01")])
        query.processAllAvailable()
        # The catalogue changes in place: the next batch must see the new price and product.
        (catalogue / "products.csv").write_text(
            "product_id,product_name,category,list_price\nP001,Laptop,Electronics,12.0\nP999,Mystery,Toys,1.0\n")
        write_one_more_file(events_dir, "b.json", [shop_event(3, "U1", "cart", "P999", "?", 1.0, 1, "10:31:00")])
        query.processAllAvailable()
        # A NEW file in the catalogue's folder is not seen: the file list was fixed at read time.
        (catalogue / "more.csv").write_text("product_id,product_name,category,list_price\nP777,Kite,Toys,3.0\n")
        write_one_more_file(events_dir, "c.json", [shop_event(4, "U3", "view", "P777", "?", 3.0, 1, "10:32:00"),
                                                   shop_event(5, "U3", "view", "P001", "?", 12.0, 1, "10:32:05")])
        query.processAllAvailable()
    finally:
        query.stop()

    def row(event, kind, product, name, category, list_price, quantity, price, moment):
        return Row(event_id=f"EVT-{event:06d}", event_type=kind, product_id=product, product_name=name,
                   category=category, list_price=list_price, quantity=quantity, price=price, timestamp=at(moment),
                   known_product=list_price is not None)

    assert seen == [
        [row(1, "view", "P001", "Laptop", "Electronics", 10.0, 1, 9.5, "10:30:00"),
         row(2, "view", "P999", None, None, None, 2, 5.0, "10:30:01")],
        [row(3, "cart", "P999", "Mystery", "Toys", 1.0, 1, 1.0, "10:31:00")],
        [row(4, "view", "P777", None, None, None, 1, 3.0, "10:32:00"),
         row(5, "view", "P001", "Laptop", "Electronics", 12.0, 1, 12.0, "10:32:05")],
    ]


@pytest.mark.kafka
@pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning")
def test_kafka_path_joins_the_producers_impressions_and_clicks(spark, kafka_bootstrap, tmp_path):
    import uuid

    from common.kafka import delete_topics, ensure_topics
    from data_generators import kafka_producer

    suffix = uuid.uuid4().hex[:8]
    topics = (f"test-impressions-{suffix}", f"test-clicks-{suffix}")
    ensure_topics(kafka_bootstrap, topics, partitions=2)
    try:
        count = 60
        _, _, _, in_bound = generated_ads(count)
        messages = kafka_producer.build_messages("ads", count, base_time=BASE_TIME, impressions_topic=topics[0],
                                                 clicks_topic=topics[1])
        kafka_producer.send_messages(kafka_bootstrap, messages)
        impression_lines, click_lines = join_lesson.read_ad_lines(spark, "kafka", kafka_bootstrap, topics=topics)
        joined = join_lesson.build_ad_join(
            join_lesson.parse_records(impression_lines, IMPRESSION_SCHEMA, "impression_id", "impression_time"),
            join_lesson.parse_records(click_lines, CLICK_SCHEMA, "click_id", "click_time"),
            "inner",
        )

        run = collect_batches(joined, tmp_path / "chk")
    finally:
        delete_topics(kafka_bootstrap, list(topics))

    assert {(row.impression_id, row.click_id) for row in run.rows()} == in_bound
    assert len(run.rows()) == len(in_bound)


@pytest.mark.smoke
@pytest.mark.kafka
def test_lesson_09_runs_by_itself(course_home, kafka_bootstrap):
    result = run_script("streaming_tutorial/09_stream_joins.py", home=course_home, timeout=600)

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert f"Using the Kafka cluster in KAFKA_BOOTSTRAP_SERVERS: {kafka_bootstrap}" in out
    assert "Started the ecommerce simulator" in out and "Started the kafka_producer simulator" in out
    assert "|event_id  |event_type|product_id|product_name" in out
    assert "not supported without a watermark" in out
    assert "  left outer: IMP-2+null, IMP-3+null, IMP-4+null, IMP-5+CLK-5" in out
    assert re.search(r"^batch \d+ - watermark \S+: \d+ matched, \d+ impressions without a click$", out, re.MULTILINE)
    assert "|ad_id|impressions|clicks|ctr_percent|" in out

"""Lesson 17: the e-commerce capstone, its seven queries on one stream, alerts once, the dashboard.

The lesson's own queries (start_queries) run in-process on the simulator's events with a fixed
seed and base time (2 files, one per micro-batch, availableNow); every figure is checked exactly
against the same events added up in plain Python. A replayed micro-batch writes no alert twice.
The dashboard's text is a pure function of a snapshot, checked on a fixed one.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import replace
from datetime import timedelta, timezone

import lesson17_alerts as alerts
import lesson17_dashboard as dashboard
import pytest

from common import config, parsing
from common.timestamps import iso, parse_iso
from conftest import load_lesson, prose, run_script, shop_event
from data_generators.generate_ecommerce_events import make_ecommerce_events
from infra import checkpoints
from infra.files import json_lines, write_atomically
from infra.runner import finish

lesson = load_lesson("17_ecommerce_pipeline")

# 10:30:00 to 11:11:09
EVENTS = make_ecommerce_events(1000, seed=42, base_time=config.BASE_EVENT_TIME)
FILES = 2  # one micro-batch each, then one more without data: the watermark moved
BROKEN_LINE = '{"event_id": "EVT-999999", "user_id": '
# Purchases the schema accepts (those fields may be null in a view) but the lesson cannot add up.
UNPRICED = [
    {**shop_event(990 + number, "USER-2001", "purchase", "10:40:00"), field: None}
    for number, field in enumerate(lesson.PURCHASE_NEEDS)
]
BAD_LINES = [BROKEN_LINE, *(json_lines([event]).strip() for event in UNPRICED)]


def window_start(time: str, minutes: int) -> str:
    moment = parse_iso(time)
    return iso(moment - timedelta(minutes=moment.minute % minutes, seconds=moment.second))


def purchases():
    return [event for event in EVENTS if event["event_type"] == "purchase"]


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    """The lesson's seven queries over the two files: the folder they wrote into, how to start them
    again, and the queries last started."""
    root = tmp_path_factory.mktemp("shop")
    for number in range(FILES):
        part = EVENTS[number * 500 : (number + 1) * 500]
        write_atomically(
            root / "in",
            f"events-{number:04d}.json",
            json_lines(part) + ("\n".join(BAD_LINES) + "\n" if number == 1 else ""),
        )
    parsed = lesson.parse_events(
        lesson.read_event_files(spark, root / "in", max_files_per_trigger=1)
    )
    triggers = {name: {"availableNow": True} for name in lesson.TRIGGERS}
    started = []

    def start():
        started[:] = lesson.start_queries(
            parsed, lesson.FILE_ORIGIN, root / "out", root / "chk", triggers, None
        )
        finish(started)

    start()
    return root, start, started


def test_revenue_per_category_window_is_exactly_the_purchases_added_up(run):
    root, *_ = run
    expected = defaultdict(list)
    for event in purchases():
        expected[(window_start(event["timestamp"], 5), event["category"])].append(event)
    rows = alerts.read_batch_files(root / "out" / "revenue", "*")
    latest = alerts.latest_per_key(rows, "window_start", "category")
    assert [
        (row["window_start"], row["category"], row["purchases"], row["revenue"], row["avg_price"])
        for row in latest
    ] == [
        (
            start,
            category,
            len(group),
            round(sum(e["price"] * e["quantity"] for e in group), 2),
            round(sum(e["price"] for e in group) / len(group), 2),
        )
        for (start, category), group in sorted(expected.items())
    ]
    assert (latest[0]["window_start"], latest[0]["category"], latest[0]["revenue"]) == (
        "2025-01-15T10:30:00.000Z",
        "Electronics",
        9349.87,
    )
    # Update mode: a window still open when a batch ends comes again, changed, in a later batch.
    assert len(rows) > len(latest) and {row["batch_id"] for row in rows} == {0, 1}


def test_funnel_counts_per_window_and_the_rates_asked_with_sql(spark, run):
    counts = defaultdict(lambda: [0, 0, 0])
    for event in EVENTS:
        counts[window_start(event["timestamp"], 2)][
            ("view", "cart", "purchase").index(event["event_type"])
        ] += 1
    table = spark.sql("SELECT * FROM funnel ORDER BY window_start").collect()
    assert [
        (iso(row.window_start.replace(tzinfo=timezone.utc)), row.views, row.carts, row.purchases)
        for row in table
    ] == [(start, *count) for start, count in sorted(counts.items())]
    views, carts, bought = (sum(count[index] for count in counts.values()) for index in range(3))
    assert tuple(spark.sql(lesson.FUNNEL_SQL).first()) == (views, carts, bought) == (711, 172, 117)
    assert (
        dashboard.funnel_line(views, carts, bought)
        == "views 711 -> carts 172 (24.2%) -> purchases 117 (68.0%); overall 16.5%"
    )


def test_sessions_close_after_a_minute_without_an_event_once_the_watermark_passes(run):
    root, *_ = run
    by_user = defaultdict(list)
    for event in EVENTS:
        by_user[event["user_id"]].append(event)
    watermark = parse_iso(EVENTS[-1]["timestamp"]) - timedelta(minutes=2)  # after the last batch
    expected = []
    for user, events in by_user.items():
        sessions = [[events[0]]]
        for event in events[1:]:  # a new session when a minute or more passed since the last event
            gap = parse_iso(event["timestamp"]) - parse_iso(sessions[-1][-1]["timestamp"])
            if gap < timedelta(minutes=1):
                sessions[-1].append(event)
            else:
                sessions.append([event])
        for session in sessions:
            first, last = parse_iso(session[0]["timestamp"]), parse_iso(session[-1]["timestamp"])
            if last + timedelta(minutes=1) <= watermark:
                expected.append(
                    (
                        user,
                        iso(first),
                        iso(last + timedelta(minutes=1)),
                        int((last - first).seconds),
                        len(session),
                        any(e["event_type"] == "purchase" for e in session),
                    )
                )
    rows = alerts.read_batch_files(root / "out" / "sessions", "*")
    assert sorted(
        (
            r["user_id"],
            r["session_start"],
            r["session_end"],
            r["seconds"],
            r["events"],
            r["purchased"],
        )
        for r in rows
    ) == sorted(expected)
    assert len(rows) == 255


def test_trending_products_in_delta_and_the_alerts(spark, run):
    root, *_ = run
    trending = {
        row.product_id: (row.views, row.carts, row.purchases)
        for row in spark.read.format("delta").load(str(root / "out" / "trending")).collect()
    }
    expected = defaultdict(lambda: [0, 0, 0])
    for event in EVENTS:
        expected[event["product_id"]][("view", "cart", "purchase").index(event["event_type"])] += 1
    assert trending == {product: tuple(count) for product, count in expected.items()}

    written = alerts.read_alerts(root / "out" / "alerts")
    large = [a["alert_id"] for a in written if a["kind"] == "large purchase"]
    assert sorted(large) == sorted(
        f"large:{e['event_id']}" for e in purchases() if e["price"] * e["quantity"] >= 1000
    )
    drops = [
        (a["category"], a["window_start"], a["revenue"], a["recent_average"])
        for a in written
        if a["kind"] == "revenue drop"
    ]
    # Fashion sold 24.99 in 10:55-11:00, after 369.92 a window on average in the three before.
    assert drops == [("Fashion", "2025-01-15T10:55:00.000Z", 24.99, 369.92)]


def test_bad_lines_and_purchases_without_price_category_or_quantity_are_quarantined(spark, run):
    root, *_ = run
    assert parsing.quarantine_counts(spark, root / "out" / "quarantine") == [
        ("missing category in a purchase", 1),
        ("missing price in a purchase", 1),
        ("missing quantity in a purchase", 1),
        ("not a JSON object", 1),
    ]
    good = spark.sql(lesson.FUNNEL_SQL).first()
    # good + quarantined = lines in
    assert sum(good) + len(BAD_LINES) == len(EVENTS) + len(BAD_LINES) == 1004


def test_the_summary_ranks_categories_by_revenue_in_all_windows_not_the_latest_only(spark, run):
    root, _, queries = run
    board = dashboard.ShopBoard(
        spark,
        queries,
        root / "out",
        funnel_sql=lesson.FUNNEL_SQL,
        trending=root / "out" / "trending",
    )
    board.refresh()
    totals = defaultdict(float)
    for event in purchases():
        totals[event["category"]] += event["price"] * event["quantity"]
    figures = board.snapshot()
    assert figures.category_totals == sorted(
        ((name, round(total, 2)) for name, total in totals.items()), key=lambda item: -item[1]
    )
    assert len(figures.category_totals) > len(figures.revenue)  # some sold in earlier windows only
    assert figures.funnel == (711, 172, 117) and figures.alert_count == 7


def test_a_redraw_before_the_trending_tables_first_commit_shows_no_products(spark, run, tmp_path):
    _, _, queries = run
    # made by the query before its first commit
    (tmp_path / "trending" / "_delta_log").mkdir(parents=True)
    board = dashboard.ShopBoard(
        spark, queries, tmp_path, funnel_sql=lesson.FUNNEL_SQL, trending=tmp_path / "trending"
    )

    assert board.read_products() == []


def test_a_replayed_batch_writes_no_alert_twice(run):
    root, start, _ = run
    folder = root / "out" / "alerts"
    before = {path.name: (path.read_text(), path.stat().st_ino) for path in folder.glob("*.json")}
    replayed = [
        checkpoints.forget_last_commit(root / "chk" / name)
        for name in ("large_purchases", "revenue_drops")
    ]
    # The last batch of each: batch 1 read the second file (large purchases in it); batch 2 read
    # nothing, but the watermark had moved and closed 10:55-11:00, Fashion's drop.
    assert replayed == [1, 2]
    start()  # Spark runs each query's last batch again: same id, same input
    after = {path.name: (path.read_text(), path.stat().st_ino) for path in folder.glob("*.json")}
    # written again (a new file renamed in)
    rewritten = {name for name in after if after[name][1] != before[name][1]}
    assert sorted((name.split("-")[0], name[-17:]) for name in rewritten) == [
        ("large_purchases", "batch-000001.json"),
        ("revenue_drops", "batch-000002.json"),
    ]
    # with the same lines
    assert {name: text for name, (text, _) in after.items()} == {
        name: text for name, (text, _) in before.items()
    }
    ids = [
        json.loads(line)["alert_id"]
        for path in folder.glob("*.json")
        for line in path.read_text().splitlines()
    ]
    assert len(ids) == len(set(ids)) == 7


def test_a_revenue_drop_is_judged_against_the_recent_windows_of_the_shop():
    def window(minute: int, category: str, revenue: float) -> dict:
        return {
            "window_start": f"2025-01-15T10:{minute:02d}:00.000Z",
            "category": category,
            "revenue": revenue,
        }

    history = [
        window(30, "Home", 100.0),
        window(35, "Home", 200.0),
        window(35, "Sports", 60.0),
        window(40, "Home", 300.0),
        window(40, "Sports", 30.0),
    ]
    closed = [window(45, "Home", 90.0), window(45, "Fashion", 10.0)]
    # Home: 90 < 0.5 x 200; Sports sold nothing (0 < 0.5 x 30); Fashion has no recent average.
    assert alerts.find_revenue_drops(closed, history, ratio=0.5, recent=3) == [
        {
            "alert_id": "drop:Home:2025-01-15T10:45:00.000Z",
            "kind": "revenue drop",
            "category": "Home",
            "window_start": "2025-01-15T10:45:00.000Z",
            "revenue": 90.0,
            "recent_average": 200.0,
        },
        {
            "alert_id": "drop:Sports:2025-01-15T10:45:00.000Z",
            "kind": "revenue drop",
            "category": "Sports",
            "window_start": "2025-01-15T10:45:00.000Z",
            "revenue": 0.0,
            "recent_average": 30.0,
        },
    ]
    # 2 windows before
    assert alerts.find_revenue_drops(history[-2:], history[:-2], ratio=0.5, recent=3) == []


SNAPSHOT = dashboard.Snapshot(
    seconds=31.4,
    revenue_window="10:40-10:45",
    revenue=[("Electronics", 2, 2599.98, 9999.1), ("Home", 1, 34.99, 800.0)],
    category_totals=[("Electronics", 9999.1), ("Sports", 1200.0), ("Home", 800.0)],
    funnel=(120, 30, 12),
    products=[("Laptop Pro 15", 20, 6, 4), ("Desk Lamp", 15, 3, 2)],
    sessions=(5, 40, 10, 31.0),
    alerts=["10:41:07 large purchase: USER-2011 Laptop Pro 15 x2 = 2599.98"],
    alert_count=1,
    queries=[
        dashboard.QueryLine("revenue", 4, 812, 21.25, "10:31:40", 12),
        dashboard.QueryLine("funnel"),
    ],
)


def test_the_dashboard_is_a_pure_function_of_its_snapshot():
    assert (
        dashboard.render(SNAPSHOT)
        == """\
Shop pipeline, 31 s
Revenue per category (latest window 10:40-10:45)
  category     purchases  revenue  all windows
  Electronics  2          2599.98  9999.10
  Home         1          34.99    800.00
Funnel: views 120 -> carts 30 (25.0%) -> purchases 12 (40.0%); overall 10.0%
Top products
  product        views  carts  purchases
  Laptop Pro 15  20     6      4
  Desk Lamp      15     3      2
Sessions: 5 open (in state), 40 closed, 10 ended in a purchase (25.0%)
Alerts: 1, the latest:
  10:41:07 large purchase: USER-2011 Laptop Pro 15 x2 = 2599.98
Queries
  query    batch  batch ms  rows/s in  watermark  state rows
  revenue  4      812       21.2       10:31:40   12
  funnel   -      -         -          -          -"""
    )
    assert dashboard.render_summary(SNAPSHOT).splitlines()[:2] == [
        "Funnel rates: view -> cart 25.0%, cart -> purchase 40.0%, view -> purchase 10.0% "
        "(120 views, 30 carts, 12 purchases)",
        "Top categories by revenue: Electronics 9999.10, Sports 1200.00, Home 800.00",
    ]
    # Sports sold nothing in the latest window: it still ranks, by its revenue in all windows.


def test_a_large_purchase_of_a_product_without_a_name_is_described_by_its_id():
    alert = {
        "alert_id": "large:EVT-000001",
        "kind": "large purchase",
        "user_id": "USER-2001",
        "product_id": "P001",
        "category": "Home",
        "quantity": 2,
        "amount": 1200.0,
        "timestamp": "2025-01-15T10:30:05.000Z",
    }
    # to_json left out the null product_name
    assert alerts.describe_alert(alert) == "10:30:05 large purchase: USER-2001 P001 x2 = 1200.00"


def test_alerts_to_kafka_are_sent_once_though_a_batch_runs_again_or_its_query_starts_over(
    kafka_bootstrap, topic, tmp_path
):
    from infra.kafka import consume_all, ensure_topics

    target = topic("shop-alerts")
    ensure_topics(kafka_bootstrap, [target])
    large = [
        {
            "alert_id": f"large:EVT-00000{number}",
            "kind": "large purchase",
            "amount": 1000.0 + number,
        }
        for number in (1, 2)
    ]
    kafka = (kafka_bootstrap, target)
    assert alerts.write_alerts_once(large, "query-a", 0, "large_purchases", tmp_path, kafka) == 2
    # a replay
    assert alerts.write_alerts_once(large, "query-a", 0, "large_purchases", tmp_path, kafka) == 0
    # A new checkpoint: a new query id, batch ids from 0 again, the same alerts and one new one.
    more = [*large, {"alert_id": "large:EVT-000003", "kind": "large purchase", "amount": 1003.0}]
    assert alerts.write_alerts_once(more, "query-b", 0, "large_purchases", tmp_path, kafka) == 1
    assert [record.key.decode() for record in consume_all(kafka_bootstrap, target)] == [
        "large:EVT-000001",
        "large:EVT-000002",
        "large:EVT-000003",
    ]
    assert alerts.sent_to_kafka(tmp_path) == {
        "large:EVT-000001",
        "large:EVT-000002",
        "large:EVT-000003",
    }


def test_a_query_started_over_writes_its_file_alerts_again_and_the_reader_keeps_one_of_each(
    tmp_path,
):
    large = [
        {
            "alert_id": f"large:EVT-00000{number}",
            "kind": "large purchase",
            "timestamp": f"2025-01-15T10:3{number}:00.000Z",
        }
        for number in (1, 2)
    ]
    assert alerts.write_alerts_once(large, "query-a", 0, "large_purchases", tmp_path) == 2
    # A new checkpoint: a new query id, batch ids from 0 again, the same alerts.
    assert alerts.write_alerts_once(large, "query-b", 0, "large_purchases", tmp_path) == 2

    written = [
        json.loads(line)["alert_id"]
        for path in sorted(tmp_path.glob("*.json"))
        for line in path.read_text().splitlines()
    ]
    # Spark's files hold every alert twice: nothing in the sink removes the repeats ...
    assert written == ["large:EVT-000001", "large:EVT-000002"] * 2
    # ... the reader does, by alert id.
    assert [alert["alert_id"] for alert in alerts.read_alerts(tmp_path)] == [
        "large:EVT-000001",
        "large:EVT-000002",
    ]


@pytest.mark.kafka
def test_a_crash_between_the_kafka_send_and_its_marker_sends_the_alerts_again(
    kafka_bootstrap, topic, tmp_path, monkeypatch
):
    from infra.kafka import consume_all, ensure_topics

    target = topic("shop-alerts-crash")
    ensure_topics(kafka_bootstrap, [target])
    large = [{"alert_id": "large:EVT-000001", "kind": "large purchase", "amount": 1001.0}]
    kafka = (kafka_bootstrap, target)

    def crash(*args, **kwargs):
        raise RuntimeError("killed before the marker was written")

    # The crash: Kafka has acknowledged the alert, the marker never reaches the disk.
    with monkeypatch.context() as patched:
        patched.setattr(alerts, "write_atomically", crash)
        with pytest.raises(RuntimeError, match="before the marker"):
            alerts.write_alerts_once(large, "query-a", 0, "large_purchases", tmp_path, kafka)
    assert alerts.sent_to_kafka(tmp_path) == set()
    # The replay of batch 0: no marker lists the alert, so it goes out again.
    assert alerts.write_alerts_once(large, "query-a", 0, "large_purchases", tmp_path, kafka) == 1
    assert alerts.write_alerts_once(large, "query-a", 0, "large_purchases", tmp_path, kafka) == 0

    keys = [record.key.decode() for record in consume_all(kafka_bootstrap, target)]
    assert keys == ["large:EVT-000001", "large:EVT-000001"]  # at-least-once: the key dedupes


def test_off_a_terminal_the_dashboard_is_printed_every_few_seconds_and_at_the_end():
    printed, later = [], replace(SNAPSHOT, alert_count=2)
    frames = iter([SNAPSHOT, replace(SNAPSHOT, seconds=41.0), later])
    with dashboard.Dashboard(
        lambda: next(frames), live=False, every_seconds=0, out=printed.append
    ) as screen:
        screen.tick()
        screen.tick()  # only the clock moved: not printed again
    # the last at the end
    assert printed == [
        dashboard.render(SNAPSHOT) + "\n",
        dashboard.render(later) + "\n",
    ]
    report = {
        "batchId": 7,
        "durationMs": {"triggerExecution": 640, "addBatch": 500},
        "inputRowsPerSecond": 3.5,
        "eventTime": {"watermark": "2025-01-15T10:31:40.000Z"},
        "stateOperators": [{"numRowsTotal": 9}],
    }
    assert dashboard.query_line("sessions", report) == dashboard.QueryLine(
        "sessions", 7, 640, 3.5, "10:31:40", 9
    )


@pytest.mark.smoke
def test_lesson_17_runs_by_itself(course_home):
    folder = course_home / "output" / "17_ecommerce_pipeline" / "events"  # the lesson's own input
    write_atomically(folder, "events-0001.json", json_lines(EVENTS[:400]) + BROKEN_LINE + "\n")
    result = run_script(
        "streaming_tutorial/17_ecommerce_pipeline.py",
        "--available-now",
        home=course_home,
        timeout=600,
    )

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert (
        "Checkpoints: none yet" in out and "Revenue per category (latest window 10:45-10:50)" in out
    )
    assert re.search(r"^  revenue_drops +\d+ +\d+ +[\d.]+ +10:36:26 +\d+$", out, re.MULTILINE)
    assert "Funnel rates: view -> cart " in out and "Top categories by revenue: Electronics " in out
    assert "Quarantined: 1 (not a JSON object)" in out
    assert "the repeats are removed by the reader, not by Spark" in prose(out)
    # no other lesson's input touched
    assert not (course_home / "data" / "ecommerce_events").exists()
    assert (
        course_home / "output" / "17_ecommerce_pipeline" / "pipeline.png"
    ).stat().st_size > 10_000

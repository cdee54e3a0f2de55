"""17 · The e-commerce capstone: one stream of shop events, seven queries, a live dashboard.

What you'll learn
  - One source, several queries at once, each with its own checkpoint, output mode, sink and
    trigger: revenue per category (5-min windows, update), the funnel (2-min windows, complete, a
    memory table asked with SQL), sessions (session_window, append; a 1-minute gap), trending
    products (complete, into Delta), alerts, and a quarantine for lines that are no usable event.
  - Alerts (large purchases, a category's revenue dropping well below its recent average)
    written once per alert: by query id and batch id, so a replayed micro-batch writes nothing twice.
  - A terminal dashboard (rich) from the sinks and each query's progress; a summary and a PNG.

Run
  python streaming_tutorial/17_ecommerce_pipeline.py                  # about a minute; starts the simulator
  python streaming_tutorial/17_ecommerce_pipeline.py --available-now  # the files there now, then exit
  python streaming_tutorial/17_ecommerce_pipeline.py --source kafka --alerts kafka   # the course's broker
  It reads a folder of its own, output/17_ecommerce_pipeline/events, and starts the shop simulator
  (12 files of 80 events, 2.5 s apart, on from the files there) unless one runs (--no-simulator: yours):
    python data_generators/generate_ecommerce_events.py --count 12 --interval 2.5 --events-per-file 80 --base-time 2025-01-15T10:30:00Z --output-dir output/17_ecommerce_pipeline/events
  --source kafka: the broker and data_generators/kafka_producer.py into the topic shop-events, unless it
  holds events (then it reads them). Outputs in output/17_ecommerce_pipeline/; --reset starts over.

What you'll see
  (a first run off a terminal: the dashboard every 10 s, on one redrawn in place; times and rates vary)
  Shop pipeline, 32 s
  Revenue per category (latest window 11:05-11:10)
    category     purchases  revenue  all windows
    Electronics  2          749.95   20249.53
  ...
  Funnel: views 687 -> carts 163 (23.7%) -> purchases 110 (67.5%); overall 16.0%
  Sessions: 23 open (in state), 242 closed, 96 ended in a purchase (39.7%)
  ...
    query            batch  batch ms  rows/s in  watermark  state rows
    revenue          7      416       0.0        10:59:07   12
  ...
  Top categories by revenue: Electronics 20249.53, Home 5360.55, Sports 4938.63, Fashion 2799.47
  ...
  Quarantined: none
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path

import lesson17_alerts as alerts
import lesson17_dashboard as dashboard
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import parsing, paths
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from infra import cli
from infra.kafka import end_offsets, ensure_topics, recreate_topics
from infra.kafka_broker import kafka_for_lesson
from infra.runner import (
    banner,
    checkpoint_root,
    foreach_batch,
    lesson_session,
    pick_trigger,
    run_lesson,
    run_queries,
    say,
)
from infra.simulators import simulator_for_lesson

LESSON = "17_ecommerce_pipeline"
DEFAULT_DURATION = (
    60  # an upper bound: the run ends once the simulator is done and its events are read
)
REVENUE_WINDOW, FUNNEL_WINDOW = "5 minutes", "2 minutes"
WATERMARK_DELAY = "10 minutes"  # how late an event may be and still count in its window
EVENT_TIME = "timestamp"  # the event-time column of ECOMMERCE_EVENT_SCHEMA
# Shops close a session after 20-30 minutes without a click. The simulator's shoppers click a few
# seconds apart (40 of them, 4 at a time), so its sessions end after 1 minute of event time.
SESSION_GAP, SESSION_WATERMARK = "1 minute", "2 minutes"
LARGE_PURCHASE = 1000.0  # an alert for a purchase worth this much or more (price x quantity)
DROP_RATIO, RECENT_WINDOWS = (
    0.5,
    3,
)  # an alert when a window's revenue < half the last 3 windows' average
# One trigger interval per query: alerts and the funnel often, Delta commits and closed windows less
# often. Seven queries share 2 cores: shorter intervals make Spark warn "Current batch is falling behind".
TRIGGERS = {
    "revenue": "5 seconds",
    "funnel": "4 seconds",
    "sessions": "5 seconds",
    "trending": "10 seconds",
    "large_purchases": "3 seconds",
    "revenue_drops": "10 seconds",
    "quarantine": "10 seconds",
}
INPUT = paths.output_for(
    LESSON, "events"
)  # the lesson's own input: the other lessons' stays as it is
TOPIC, ALERTS_TOPIC = (
    "shop-events",
    "shop-alerts",
)  # its own topics, not lesson 08's wall-clock 'events'
PURCHASE_NEEDS = (
    "category",
    "price",
    "quantity",
)  # a purchase without one adds up to no revenue: quarantined
BASE_TIME = "2025-01-15T10:30:00Z"  # the first event: new files go on from the last one there
SIMULATOR = (
    "ecommerce",
    "generate_ecommerce_events.py",
    [
        "--count",
        "12",
        "--interval",
        "2.5",
        "--events-per-file",
        "80",
        "--base-time",
        BASE_TIME,
        "--output-dir",
        str(INPUT),
    ],
)
PRODUCER = (
    "kafka_producer",
    "kafka_producer.py",
    [
        "--count",
        "960",
        "--rate",
        "32",
        "--base-time",
        BASE_TIME,
        "--malformed-every",
        "100",
        "--topic",
        TOPIC,
    ],
)
FUNNEL_SQL = (
    "SELECT sum(views) AS views, sum(carts) AS carts, sum(purchases) AS purchases FROM funnel"
)


def read_events(spark, source: str, bootstrap: str | None) -> DataFrame:
    """The shop events from the lesson's folder or topic, parsed (``parse_events``)."""
    return parse_events(
        parsing.kafka_text(parsing.read_kafka(spark, bootstrap, TOPIC))
        if source == "kafka"
        else parsing.read_json_lines(spark, INPUT)
    )


def parse_events(lines: DataFrame) -> DataFrame:
    """Lines parsed: a bad line (a purchase without price, category or quantity too) keeps its text and a reason."""
    parsed = parsing.parse_json(lines, ECOMMERCE_EVENT_SCHEMA)
    return parsing.require_for(
        parsed, F.col("event_type") == "purchase", PURCHASE_NEEDS, "a purchase"
    )


def build_category_revenue(events: DataFrame) -> DataFrame:
    """Purchases, revenue and average price per category per 5-minute window of event time.

    ``events``: the good shop events (ECOMMERCE_EVENT_SCHEMA, event time in ``timestamp``),
    streaming or batch; on a batch DataFrame withWatermark does nothing.
    """
    purchases = events.withWatermark(EVENT_TIME, WATERMARK_DELAY).where(
        F.col("event_type") == "purchase"
    )
    return (
        purchases.groupBy(F.window(EVENT_TIME, REVENUE_WINDOW).alias("window"), "category")
        .agg(
            F.count("*").alias("purchases"),
            # Rounded so the totals read like money (doubles add up to 0.30000000000000004).
            F.round(F.sum(F.col("price") * F.col("quantity")), 2).alias("revenue"),
            F.round(F.avg("price"), 2).alias("avg_price"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "category",
            "purchases",
            "revenue",
            "avg_price",
        )
    )


def build_funnel(events: DataFrame) -> DataFrame:
    """Views, carts and purchases per 2-minute window of event time (streaming or batch ``events``)."""
    return (
        events.groupBy(F.window(EVENT_TIME, FUNNEL_WINDOW).alias("window"))
        .agg(
            *[
                F.count_if(F.col("event_type") == kind).alias(name)
                for kind, name in (("view", "views"), ("cart", "carts"), ("purchase", "purchases"))
            ]
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "views",
            "carts",
            "purchases",
        )
    )


def build_sessions(events: DataFrame) -> DataFrame:
    """One row per shopping session: a user's events until SESSION_GAP passes without one."""
    # A session window grows with each event of its user; the watermark closes it (append mode).
    sessions = events.withWatermark(EVENT_TIME, SESSION_WATERMARK).groupBy(
        "user_id", F.session_window(EVENT_TIME, SESSION_GAP).alias("session")
    )
    return sessions.agg(
        F.count("*").alias("events"),
        F.min(EVENT_TIME).alias("first"),
        F.max(EVENT_TIME).alias("last"),
        F.max(F.col("event_type") == "purchase").alias("purchased"),
    ).select(
        "user_id",
        F.col("session.start").alias("session_start"),
        F.col("session.end").alias("session_end"),
        (F.unix_timestamp("last") - F.unix_timestamp("first")).alias("seconds"),
        "events",
        "purchased",
    )


def build_trending(events: DataFrame) -> DataFrame:
    """Views, carts and purchases per product since the first event: no window, so complete mode."""
    return events.groupBy("product_id", "product_name").agg(
        *[
            F.count_if(F.col("event_type") == kind).alias(name)
            for kind, name in (("view", "views"), ("cart", "carts"), ("purchase", "purchases"))
        ]
    )


def build_large_purchases(events: DataFrame) -> DataFrame:
    """Purchases worth LARGE_PURCHASE or more, as alerts (one per event, its id the alert's)."""
    amount = F.round(F.col("price") * F.col("quantity"), 2)
    return events.where((F.col("event_type") == "purchase") & (amount >= LARGE_PURCHASE)).select(
        F.concat(F.lit("large:"), "event_id").alias("alert_id"),
        F.lit("large purchase").alias("kind"),
        "user_id",
        "product_name",
        "category",
        "quantity",
        amount.alias("amount"),
        F.col(EVENT_TIME).alias("timestamp"),
    )


def to_dicts(batch: DataFrame) -> list[dict]:
    """A (small) micro-batch as JSON-ready dicts on the driver; times as 2025-01-15T10:30:00.000Z."""
    return [json.loads(row[0]) for row in batch.select(F.to_json(F.struct("*"))).collect()]


def write_drops(closed: DataFrame, batch_id: int, folder: Path, kafka) -> None:
    """Keep the windows this batch closed; alert on drops, judged against the windows closed before it."""
    query, rows = alerts.query_id(closed), to_dicts(closed)
    history = alerts.read_batch_files(folder / "closed_windows", query, before=batch_id)
    drops = alerts.find_revenue_drops(rows, history, ratio=DROP_RATIO, recent=RECENT_WINDOWS)
    alerts.write_batch_file(
        folder / "closed_windows", query, batch_id, rows
    )  # a replay reads the same history
    alerts.write_alerts_once(drops, query, batch_id, "revenue_drops", folder / "alerts", kafka)


def start_query(
    frame: DataFrame,
    name: str,
    mode: str,
    checkpoints: Path,
    trigger: dict,
    *,
    write=None,
    sink: str = "memory",
    path: Path | None = None,
):
    """One query with its own name and checkpoint: ``write(batch, batch_id)`` per micro-batch, or a sink."""
    writer = (
        frame.writeStream.queryName(name)
        .outputMode(mode)
        .trigger(**trigger)
        .option("checkpointLocation", paths.uri(checkpoints / name))
    )
    if write is not None:
        return writer.foreachBatch(foreach_batch(write)).start()
    return writer.format(sink).start(*([paths.uri(path)] if path else []))


def start_queries(parsed: DataFrame, folder: Path, checkpoints: Path, trigger, kafka) -> list:
    """The seven queries: each reads the source itself and keeps its own offsets and state."""
    events = parsing.valid_records(parsed, ECOMMERCE_EVENT_SCHEMA)
    keep = lambda name: (
        lambda batch, batch_id: alerts.write_batch_file(  # noqa: E731
            folder / name, alerts.query_id(batch), batch_id, to_dicts(batch)
        )
    )
    send = lambda kind: (
        lambda batch, batch_id: alerts.write_alerts_once(  # noqa: E731
            to_dicts(batch), alerts.query_id(batch), batch_id, kind, folder / "alerts", kafka
        )
    )
    return [
        # Update mode: a window's row again each time it changes (a file per batch; the latest row wins).
        start_query(
            build_category_revenue(events),
            "revenue",
            "update",
            checkpoints,
            trigger("revenue"),
            write=keep("revenue"),
        ),
        # A memory table holds the complete result: spark.sql reads it while the query runs.
        start_query(build_funnel(events), "funnel", "complete", checkpoints, trigger("funnel")),
        start_query(
            build_sessions(events),
            "sessions",
            "append",
            checkpoints,
            trigger("sessions"),
            write=keep("sessions"),
        ),
        start_query(
            build_trending(events),
            "trending",
            "complete",
            checkpoints,
            trigger("trending"),
            sink="delta",
            path=folder / "trending",
        ),
        start_query(
            build_large_purchases(events),
            "large_purchases",
            "append",
            checkpoints,
            trigger("large_purchases"),
            write=send("large_purchases"),
        ),
        # The same windows in append mode: a row once the watermark closes its window, never again.
        start_query(
            build_category_revenue(events),
            "revenue_drops",
            "append",
            checkpoints,
            trigger("revenue_drops"),
            write=lambda batch, batch_id: write_drops(batch, batch_id, folder, kafka),
        ),
        parsing.start_quarantine(
            parsing.quarantined(
                parsed,
                *({"source_file"} & set(parsed.columns) or ("source_partition", "source_offset")),
            ),
            folder / "quarantine",
            checkpoints / "quarantine",
            trigger("quarantine"),
            name="quarantine",
        ),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True)
    parser.add_argument(
        "--source",
        choices=("files", "kafka"),
        default="files",
        help=f"the event files in {paths.display(INPUT)}, or the topic '{TOPIC}' (default: files)",
    )
    parser.add_argument(
        "--alerts",
        choices=("file", "kafka"),
        default="file",
        help=f"alerts as JSON files, or to the Kafka topic '{ALERTS_TOPIC}' (default: file)",
    )
    args = parser.parse_args(argv)
    folder, checkpoints, uses_kafka = (
        paths.output_for(LESSON),
        checkpoint_root(LESSON, args),
        "kafka" in (args.source, args.alerts),
    )
    with (
        kafka_for_lesson() if uses_kafka else nullcontext() as bootstrap,
        lesson_session(LESSON, args, delta=True, kafka=uses_kafka) as spark,
    ):
        if (
            bootstrap
        ):  # --reset empties the topics too: new checkpoints would read the old events again
            (recreate_topics if args.reset else ensure_topics)(bootstrap, [TOPIC, ALERTS_TOPIC])
        if args.source == "kafka" and (held := sum(end_offsets(bootstrap, TOPIC).values())):
            print(
                f"'{TOPIC}' holds {held} messages already: read, not sent again (--reset empties it)."
            )
            args.available_now = True  # nothing to send: read what is there, then stop
        kafka = (bootstrap, ALERTS_TOPIC) if args.alerts == "kafka" else None
        banner("1. One stream of shop events, seven queries, one checkpoint each")
        with (
            simulator_for_lesson(
                *(PRODUCER if args.source == "kafka" else SIMULATOR), enabled=not args.no_simulator
            )
            if not args.available_now
            else nullcontext()
        ) as simulator:
            queries = start_queries(
                read_events(spark, args.source, bootstrap),
                folder,
                checkpoints,
                lambda name: pick_trigger(args, TRIGGERS[name]),
                kafka,
            )
            board = dashboard.ShopBoard(
                spark, queries, folder, funnel_sql=FUNNEL_SQL, trending=folder / "trending"
            )
            with dashboard.Dashboard(board.snapshot) as screen:
                run_queries(
                    queries,
                    args,
                    until=simulator.done if simulator else None,
                    every=lambda: (board.refresh(), screen.tick()),
                    every_seconds=2,
                )
                board.refresh()
        say(f"""Seven queries, each on its own trigger and checkpoint in {paths.display(checkpoints)}/<query>,
            sharing the driver's cores. Reset one (delete its checkpoint) and it alone reads its input
            again; its files are named after its query id, new with a new checkpoint, so they do not mix
            with the old, and no alert goes out twice (the quarantine, a file sink, needs its folder
            deleted too: its log skips batch ids it saw). Trending is in complete mode: Delta replaces
            the table in one commit; a Parquet sink can only add files, so Spark refuses it (lesson 11).""")

        banner("2. The funnel, asked with SQL (the memory table 'funnel')")
        print(FUNNEL_SQL)
        spark.sql(FUNNEL_SQL).show()
        say(
            """The memory sink keeps the complete result in the driver: gone with the process. Its
            checkpoint rebuilds it from the query's state at the next batch"""
            + (
                "."
                if spark.sql(FUNNEL_SQL).first().views is not None
                else ": no new input, no batch, an empty table (nulls above)."
            )
        )

        banner("3. What the run added up to")
        print(dashboard.render_summary(board.snapshot()))
        print(f"Quarantined: {parsing.quarantine_summary(spark, folder / 'quarantine')}")
        picture = board.plot(folder / "pipeline.png")
        print(f"Saved {paths.display(picture)}: revenue per category over time, and the funnel.")


if __name__ == "__main__":
    run_lesson(main)

r"""17 · The e-commerce capstone: one stream of shop events, seven queries, a live dashboard.

What you'll learn
  - One source, several queries at once, each with its own checkpoint, output mode, sink and
    trigger: revenue per category (5-min windows, update), the funnel (2-min windows, complete,
    a memory table asked with SQL), sessions (session_window, append; a 1-minute gap), trending
    products (complete, into Delta), alerts, and a quarantine for lines that are no usable event.
  - Alerts (large purchases, a category's revenue dropping well below its recent average)
    keyed by query id and batch id, so a replayed micro-batch writes nothing twice; a query
    started over writes its alerts again, and the reader keeps one per alert id.
  - A terminal dashboard (rich) from the sinks and each query's progress; a summary and a PNG.

Run
  python streaming_tutorial/17_ecommerce_pipeline.py       # about a minute; starts the simulator
  python streaming_tutorial/17_ecommerce_pipeline.py --available-now   # the files there, then exit
  python streaming_tutorial/17_ecommerce_pipeline.py --source kafka --alerts kafka  # via Kafka
  It reads a folder of its own, output/17_ecommerce_pipeline/events, and starts the shop
  simulator (12 files of 80 events, 2.5 s apart, on from the files there) unless one runs
  (--no-simulator: yours):
    python data_generators/generate_ecommerce_events.py --count 12 --interval 2.5 \
      --events-per-file 80 --base-time 2025-01-15T10:30:00Z \
      --output-dir output/17_ecommerce_pipeline/events
  --source kafka: the broker and data_generators/kafka_producer.py into the topic shop-events,
  unless it holds events (then it reads them). Outputs in output/17_ecommerce_pipeline/;
  --reset starts over.

Practise
  python course.py exercises check 17.1   Revenue per category (build)
  python course.py exercises check 17.2   Alerts from the revenue table (build)

What you'll see
  (a first run off a terminal: the dashboard every 10 s, on one redrawn in place;
  times and rates vary)
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
from typing import Sequence

import lesson17_alerts as alerts
import lesson17_dashboard as dashboard
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from common import parsing, paths
from common.batch_ids import query_id
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from infra import cli
from infra.kafka import end_offsets, ensure_topics, recreate_topics, spark_options
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
# An upper bound: the run ends once the simulator is done and its events are read.
DEFAULT_DURATION = 60
REVENUE_WINDOW = "5 minutes"
FUNNEL_WINDOW = "2 minutes"
# An event up to this far behind the latest counts; a later one only while its window is open.
WATERMARK_DELAY = "10 minutes"
EVENT_TIME = "timestamp"  # the event-time column of ECOMMERCE_EVENT_SCHEMA
# Shops close a session after 20-30 minutes without a click. The simulator's shoppers click a
# few seconds apart (40 of them, 4 at a time), so its sessions end after 1 minute of event time.
SESSION_GAP = "1 minute"
SESSION_WATERMARK = "2 minutes"
LARGE_PURCHASE = 1000.0  # an alert for a purchase worth this much or more (price x quantity)
# An alert when a window's revenue is below half the average of the 3 windows before it.
DROP_RATIO = 0.5
RECENT_WINDOWS = 3
# One trigger interval per query: alerts and the funnel often, Delta commits and closed windows
# less often. Seven queries share 2 cores: shorter intervals make Spark warn "Current batch is
# falling behind".
TRIGGERS = {
    "revenue": "5 seconds",
    "funnel": "4 seconds",
    "sessions": "5 seconds",
    "trending": "10 seconds",
    "large_purchases": "3 seconds",
    "revenue_drops": "10 seconds",
    "quarantine": "10 seconds",
}
# The lesson's own input: the other lessons' stays as it is.
INPUT = paths.output_for(LESSON, "events")
TOPIC = "shop-events"  # its own topics, not lesson 08's wall-clock 'events'
ALERTS_TOPIC = "shop-alerts"
# Where a line came from, kept with it in the quarantine: its file, or its place in the topic.
FILE_ORIGIN = ("source_file",)
TOPIC_ORIGIN = ("source_partition", "source_offset")
# A purchase without one of these adds up to no revenue: quarantined.
PURCHASE_NEEDS = ("category", "price", "quantity")
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


def read_event_files(spark, folder: Path, max_files_per_trigger: int | None = None) -> DataFrame:
    """Each line of the folder's files as text (``value``), with the file it came from."""
    # No limit by default: each micro-batch reads every new file (the tests read one at a time).
    limit = {"maxFilesPerTrigger": max_files_per_trigger} if max_files_per_trigger else {}
    folder.mkdir(parents=True, exist_ok=True)  # a file source refuses a folder that is not there
    return (
        spark.readStream.options(**limit)
        # Text first, parsed later: a line that is no JSON is kept, with a reason, not lost.
        .text(paths.uri(folder))
        # _metadata is the hidden per-file column of file sources: which file each line came from.
        .withColumn("source_file", F.col("_metadata.file_name"))
    )


def read_event_topic(spark, bootstrap: str) -> DataFrame:
    """The topic's messages as text (``value``), with where each came from in the topic."""
    return (
        spark.readStream.format("kafka")
        # The address, and a secured cluster's login (lesson_session put the connector in place).
        .options(**spark_options(bootstrap))
        .option("subscribe", TOPIC)
        # The default is "latest": a new query would skip everything already in the topic.
        .option("startingOffsets", "earliest")
        .load()
        # Kafka's value is bytes: as text it parses the same way as a line of a file.
        .select(
            F.col("value").cast("string").alias("value"),
            F.col("partition").alias("source_partition"),
            F.col("offset").alias("source_offset"),
        )
    )


def parse_events(lines: DataFrame) -> DataFrame:
    """Lines parsed (lesson 03's parse with a quarantine reason); a purchase without price,
    category or quantity gets a reason too, and its text is kept."""
    parsed = parsing.parse_json(lines, ECOMMERCE_EVENT_SCHEMA)
    return parsing.require_for(
        parsed, F.col("event_type") == "purchase", PURCHASE_NEEDS, "a purchase"
    )


def build_category_revenue(events: DataFrame) -> DataFrame:
    """Purchases, revenue and average price per category per 5-minute window of event time.

    ``events``: the good shop events (ECOMMERCE_EVENT_SCHEMA, event time in ``timestamp``),
    streaming or batch; on a batch DataFrame withWatermark does nothing.
    """
    purchases = (
        events.withWatermark(EVENT_TIME, WATERMARK_DELAY)
        # Revenue comes from purchases only; views and carts add up to nothing here.
        .where(F.col("event_type") == "purchase")
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
    """Views, carts and purchases per 2-minute window of event time (streaming or batch)."""
    return (
        events.groupBy(F.window(EVENT_TIME, FUNNEL_WINDOW).alias("window"))
        .agg(
            F.count_if(F.col("event_type") == "view").alias("views"),
            F.count_if(F.col("event_type") == "cart").alias("carts"),
            F.count_if(F.col("event_type") == "purchase").alias("purchases"),
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
    return (
        events.withWatermark(EVENT_TIME, SESSION_WATERMARK)
        # A session window grows with each event of its user; the watermark closes it (append).
        .groupBy("user_id", F.session_window(EVENT_TIME, SESSION_GAP).alias("session"))
        .agg(
            F.count("*").alias("events"),
            F.min(EVENT_TIME).alias("first"),
            F.max(EVENT_TIME).alias("last"),
            F.max(F.col("event_type") == "purchase").alias("purchased"),
        )
        .select(
            "user_id",
            F.col("session.start").alias("session_start"),
            F.col("session.end").alias("session_end"),
            (F.unix_timestamp("last") - F.unix_timestamp("first")).alias("seconds"),
            "events",
            "purchased",
        )
    )


def build_trending(events: DataFrame) -> DataFrame:
    """Views, carts and purchases per product since the first event: no window, so complete mode."""
    return events.groupBy("product_id", "product_name").agg(
        F.count_if(F.col("event_type") == "view").alias("views"),
        F.count_if(F.col("event_type") == "cart").alias("carts"),
        F.count_if(F.col("event_type") == "purchase").alias("purchases"),
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
    """A (small) micro-batch as JSON-ready dicts on the driver; times as 2025-01-15T10:30:00.000Z
    (to_json's format: what the alert and batch files hold)."""
    return [json.loads(row[0]) for row in batch.select(F.to_json(F.struct("*"))).collect()]


def write_rows(batch: DataFrame, batch_id: int, folder: Path) -> None:
    """The foreachBatch function of revenue and sessions: the batch's rows to a file named after
    the query id and the batch id, so a replayed batch rewrites the same file."""
    alerts.write_batch_file(folder, query_id(batch), batch_id, to_dicts(batch))


def write_large_purchases(
    batch: DataFrame, batch_id: int, alert_folder: Path, kafka: tuple[str, str] | None
) -> None:
    """The foreachBatch function of the large purchases: each alert written once, keyed by the
    query id and the batch id (to files, or to Kafka when ``kafka`` is (bootstrap, topic))."""
    alerts.write_alerts_once(
        to_dicts(batch), query_id(batch), batch_id, "large_purchases", alert_folder, kafka
    )


def write_revenue_drops(
    closed: DataFrame,
    batch_id: int,
    history: Path,
    alert_folder: Path,
    kafka: tuple[str, str] | None,
) -> None:
    """The foreachBatch function of the revenue drops: keep the windows this batch closed in
    ``history``, and alert on drops judged against the windows closed before it."""
    query = query_id(closed)
    rows = to_dicts(closed)
    before = alerts.read_batch_files(history, query, before=batch_id)
    drops = alerts.find_revenue_drops(rows, before, ratio=DROP_RATIO, recent=RECENT_WINDOWS)
    # Kept by batch id: a replay of this batch reads the same history, so it finds the same drops.
    alerts.write_batch_file(history, query, batch_id, rows)
    alerts.write_alerts_once(drops, query, batch_id, "revenue_drops", alert_folder, kafka)


def start_revenue(
    revenue: DataFrame, folder: Path, checkpoint: Path, trigger: dict
) -> StreamingQuery:
    """Revenue per category and window into ``folder``, a file per micro-batch."""
    return (
        revenue.writeStream.foreachBatch(
            foreach_batch(lambda batch, batch_id: write_rows(batch, batch_id, folder))
        )
        # Update mode: a window's row again each time it changes (the latest row wins).
        .outputMode("update")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .queryName("revenue")
        .start()
    )


def start_funnel(funnel: DataFrame, checkpoint: Path, trigger: dict) -> StreamingQuery:
    """The funnel per window into the memory table 'funnel' (the query's name)."""
    # Fine for a run of minutes, not for weeks: complete mode keeps every window in the state
    # and the memory table on the driver, a row per 2 minutes of event time, for good.
    return (
        funnel.writeStream.format("memory")
        # A memory table holds the complete result: spark.sql reads it while the query runs.
        .outputMode("complete")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .queryName("funnel")
        .start()
    )


def start_sessions(
    sessions: DataFrame, folder: Path, checkpoint: Path, trigger: dict
) -> StreamingQuery:
    """Closed sessions into ``folder``, a file per micro-batch."""
    return (
        sessions.writeStream.foreachBatch(
            foreach_batch(lambda batch, batch_id: write_rows(batch, batch_id, folder))
        )
        # Append mode: a session once the watermark has closed it, never again.
        .outputMode("append")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .queryName("sessions")
        .start()
    )


def start_trending(
    trending: DataFrame, table: Path, checkpoint: Path, trigger: dict
) -> StreamingQuery:
    """Views, carts and purchases per product into the Delta table ``table``."""
    return (
        trending.writeStream.format("delta")
        # Complete mode: Delta replaces the whole table in one commit at each micro-batch.
        .outputMode("complete")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .queryName("trending")
        .start(paths.uri(table))
    )


def start_large_purchases(
    large: DataFrame,
    alert_folder: Path,
    checkpoint: Path,
    trigger: dict,
    kafka: tuple[str, str] | None,
) -> StreamingQuery:
    """An alert per large purchase, written once (``write_large_purchases``)."""
    return (
        large.writeStream.foreachBatch(
            foreach_batch(
                lambda batch, batch_id: write_large_purchases(batch, batch_id, alert_folder, kafka)
            )
        )
        .outputMode("append")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .queryName("large_purchases")
        .start()
    )


def start_revenue_drops(
    revenue: DataFrame,
    folder: Path,
    checkpoint: Path,
    trigger: dict,
    kafka: tuple[str, str] | None,
) -> StreamingQuery:
    """An alert per category whose revenue in a closed window dropped (``write_revenue_drops``);
    the closed windows are kept in ``folder``/closed_windows, the alerts in ``folder``/alerts."""
    return (
        revenue.writeStream.foreachBatch(
            foreach_batch(
                lambda batch, batch_id: write_revenue_drops(
                    batch, batch_id, folder / "closed_windows", folder / "alerts", kafka
                )
            )
        )
        # The revenue windows in append mode: a row once the watermark closes its window.
        .outputMode("append")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .queryName("revenue_drops")
        .start()
    )


def start_quarantine(
    bad: DataFrame, folder: Path, checkpoint: Path, trigger: dict
) -> StreamingQuery:
    """The lines that are no usable event, with their reason, appended to JSON files."""
    return (
        bad.writeStream.format("json")
        # A file sink with its own checkpoint: a restart adds only the lines not written yet.
        .outputMode("append")
        .option("path", paths.uri(folder))
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .queryName("quarantine")
        .start()
    )


def start_queries(
    parsed: DataFrame,
    origin: Sequence[str],
    folder: Path,
    checkpoints: Path,
    triggers: dict[str, dict],
    kafka: tuple[str, str] | None,
) -> list[StreamingQuery]:
    """The seven queries on the parsed lines: each reads the source itself and keeps its own
    offsets and state in ``checkpoints``/<query name>.

    ``origin``: the columns that say where a line came from (FILE_ORIGIN or TOPIC_ORIGIN),
    kept with it in the quarantine; ``triggers``: each query's trigger, by its name.
    """
    # Six queries add up the good events; the seventh keeps the lines that are none.
    events = parsing.valid_records(parsed, ECOMMERCE_EVENT_SCHEMA)
    bad = parsing.quarantined(parsed, *origin)
    revenue = start_revenue(
        build_category_revenue(events),
        folder / "revenue",
        checkpoints / "revenue",
        triggers["revenue"],
    )
    funnel = start_funnel(build_funnel(events), checkpoints / "funnel", triggers["funnel"])
    sessions = start_sessions(
        build_sessions(events),
        folder / "sessions",
        checkpoints / "sessions",
        triggers["sessions"],
    )
    trending = start_trending(
        build_trending(events),
        folder / "trending",
        checkpoints / "trending",
        triggers["trending"],
    )
    large_purchases = start_large_purchases(
        build_large_purchases(events),
        folder / "alerts",
        checkpoints / "large_purchases",
        triggers["large_purchases"],
        kafka,
    )
    # The same windows as revenue's, in another output mode, on a checkpoint of their own.
    revenue_drops = start_revenue_drops(
        build_category_revenue(events),
        folder,
        checkpoints / "revenue_drops",
        triggers["revenue_drops"],
        kafka,
    )
    quarantine = start_quarantine(
        bad, folder / "quarantine", checkpoints / "quarantine", triggers["quarantine"]
    )
    return [revenue, funnel, sessions, trending, large_purchases, revenue_drops, quarantine]


def prepare_topics(bootstrap: str, args) -> None:
    """Make the lesson's topics. Events the topic holds already are read, not sent again."""
    if args.reset:
        # --reset empties the topics too: new checkpoints would read the old events again.
        recreate_topics(bootstrap, [TOPIC, ALERTS_TOPIC])
    else:
        ensure_topics(bootstrap, [TOPIC, ALERTS_TOPIC])
    if args.source != "kafka":
        return
    held = sum(end_offsets(bootstrap, TOPIC).values())
    if held:
        print(
            f"'{TOPIC}' holds {held} messages already: read, not sent again (--reset empties it)."
        )
        args.available_now = True  # nothing to send: read what is there, then stop


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
    folder = paths.output_for(LESSON)
    checkpoints = checkpoint_root(LESSON, args)
    uses_kafka = "kafka" in (args.source, args.alerts)
    # The course's broker (started for this run unless one answers), only if Kafka is asked for.
    broker = kafka_for_lesson() if uses_kafka else nullcontext()
    with broker as bootstrap, lesson_session(LESSON, args, delta=True, kafka=uses_kafka) as spark:
        if bootstrap:
            prepare_topics(bootstrap, args)
        kafka = None
        if args.alerts == "kafka":
            kafka = (bootstrap, ALERTS_TOPIC)
        triggers = {name: pick_trigger(args, interval) for name, interval in TRIGGERS.items()}
        # The simulator (or producer) feeds the source while the queries run; --available-now
        # reads what is there and stops.
        feeder = nullcontext()
        if not args.available_now:
            name, script, options = PRODUCER if args.source == "kafka" else SIMULATOR
            feeder = simulator_for_lesson(name, script, options, enabled=not args.no_simulator)

        banner("1. One stream of shop events, seven queries, one checkpoint each")
        with feeder as simulator:
            if args.source == "kafka":
                lines = read_event_topic(spark, bootstrap)
                origin = TOPIC_ORIGIN
            else:
                lines = read_event_files(spark, INPUT)
                origin = FILE_ORIGIN
            parsed = parse_events(lines)
            queries = start_queries(parsed, origin, folder, checkpoints, triggers, kafka)
            board = dashboard.ShopBoard(
                spark, queries, folder, funnel_sql=FUNNEL_SQL, trending=folder / "trending"
            )
            with dashboard.Dashboard(board.snapshot) as screen:

                def redraw() -> None:
                    board.refresh()
                    screen.tick()

                until = None
                if simulator:
                    until = simulator.done
                run_queries(queries, args, until=until, every=redraw, every_seconds=2)
                board.refresh()
        say(f"""Seven queries, each on its own trigger and checkpoint in
            {paths.display(checkpoints)}/<query>, sharing the driver's cores. Reset one (delete
            its checkpoint) and it alone reads its input again, with a new query id; its files
            are named after that id, so they do not mix with the old (the quarantine, a file
            sink, needs its folder deleted too: its log skips batch ids it saw). Trending is in
            complete mode: Delta replaces the table in one commit; a Parquet sink can only add
            files, so Spark refuses it (lesson 11).""")
        say("""The alerts: a replayed micro-batch (same query id, same batch id) rewrites its
            alert file with the same lines, so a replay adds nothing: that much is exactly-once.
            An alerts query started over (a new checkpoint) writes every alert again, to files
            of its new id; read_alerts (lesson17_alerts.py), the dashboard's reader, keeps one
            per alert id: the repeats are removed by the reader, not by Spark. With --alerts
            kafka, a marker per batch lists the alert ids sent, and an id already listed is not
            sent again, across replays and restarts alike; but a crash after Kafka took the
            alerts and before the marker is written sends them again on the replay. Each alert
            carries its alert_id as key, for consumers to drop repeats (exactly-once into Kafka
            would need Kafka transactions).""")

        banner("2. The funnel, asked with SQL (the memory table 'funnel')")
        print(FUNNEL_SQL)
        spark.sql(FUNNEL_SQL).show()
        if spark.sql(FUNNEL_SQL).first().views is not None:
            rebuilt = "."
        else:
            rebuilt = ": no new input, no batch, an empty table (nulls above)."
        say(
            """The memory sink keeps the complete result in the driver: gone with the process. Its
            checkpoint rebuilds it from the query's state at the next batch"""
            + rebuilt
        )
        say("""Complete mode keeps every window (a watermark would not change that): over a long
            run the funnel's state and its table on the driver grow by a row per 2 minutes of
            event time, without end. A production job adds a watermark and writes closed
            windows in append mode (or changed ones in update mode) to a durable sink such as
            Delta, where readers query it.""")

        banner("3. What the run added up to")
        print(dashboard.render_summary(board.snapshot()))
        print(f"Quarantined: {parsing.quarantine_summary(spark, folder / 'quarantine')}")
        picture = board.plot(folder / "pipeline.png")
        print(f"Saved {paths.display(picture)}: revenue per category over time, and the funnel.")


if __name__ == "__main__":
    run_lesson(main)

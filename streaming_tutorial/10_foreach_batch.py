"""10 · foreachBatch: one micro-batch, several destinations, and no duplicates on replay.

What you'll learn
  - ``foreachBatch`` hands you each micro-batch as a DataFrame plus its batch id: write it
    anywhere a batch job can (a Delta table, a database over JDBC, files, Kafka).
  - ``persist()`` the batch when it feeds several writes, ``unpersist()`` after.
  - foreachBatch is at-least-once: after a crash Spark runs the last batch AGAIN with the
    same id. Make each write idempotent: Delta's ``txnAppId``/``txnVersion``, a database
    transaction that records the batch id, files named after the batch id.
  - Spark's JDBC writer cannot add to totals; a JDBC connection on the driver, in one
    transaction, can (``INSERT ... ON CONFLICT ... DO UPDATE``: SQLite and PostgreSQL).

Run
  python streaming_tutorial/10_foreach_batch.py                   # SQLite file, alerts as files
  python streaming_tutorial/10_foreach_batch.py --alerts kafka    # alerts to the 'alerts' topic
  python streaming_tutorial/10_foreach_batch.py --jdbc-url jdbc:postgresql://localhost:5432/shop \\
      --jdbc-user shop --jdbc-password secret
  Files in data/ecommerce_events and no simulator running: it reads them once. No files: it
  starts the shop simulator (4 files, one every 3 s) and stops once they are read. To run the
  simulator yourself, start it first in a second terminal:
    python data_generators/generate_ecommerce_events.py --count 4 --interval 3
  Outputs in output/10_foreach_batch/ (--reset deletes them; PostgreSQL keeps its tables).

What you'll see
  (a first run on an empty folder, which starts the simulator; counts vary with timing)
  batch 0: 20 events -> Delta v0 | 3 purchases -> database (Electronics) | 3 alerts | 0 quarantined
  batch 1: 60 events -> Delta v1 | 8 purchases -> database (Electronics, Fashion, Home, Sports) | 0 alerts | ...
  Delta table output/10_foreach_batch/events: 80 rows in 2 versions
  category_sales in jdbc:sqlite:output/10_foreach_batch/shop.db:
    category     purchases  units  revenue  last_batch
    Electronics  4          10     7749.9   1
  ...
  applied_batches: 2 batch ids recorded
  Alerts: 3 lines in output/10_foreach_batch/alerts
  ...
  Deleted checkpoints/10_foreach_batch/events/commits/1: to Spark, batch 1 never finished.
  batch 1 (again): 60 events -> Delta skipped (txnVersion 1 already committed) | database skipped (batch 1 ...
  Delta rows: 80 -> 80; database purchases: 11 -> 11; alert lines: 3 -> 3
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import config, database, parsing, paths
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from infra import cli, files, kafka, kafka_broker, simulators
from infra.runner import (
    banner,
    checkpoint_root,
    finish,
    foreach_batch,
    lesson_session,
    run_lesson,
    run_queries,
    say,
)
from teaching import checkpoints, narration

LESSON = "10_foreach_batch"
DEFAULT_DURATION = (
    60  # an upper bound: the lesson stops once the simulator is done and its files are read
)
TRIGGER_INTERVAL = "3 seconds"
ALERT_THRESHOLD = 500.0  # a purchase worth at least this much (price x quantity) raises an alert
SIMULATOR = ("ecommerce", "generate_ecommerce_events.py", ["--count", "4", "--interval", "3"])
# Per-category totals to which each batch ADDS its own, in SQL that SQLite and PostgreSQL both accept.
CATEGORY_SALES = """CREATE TABLE IF NOT EXISTS category_sales (
    category VARCHAR(64) PRIMARY KEY, purchases BIGINT NOT NULL, units BIGINT NOT NULL,
    revenue DOUBLE PRECISION NOT NULL, last_batch BIGINT NOT NULL)"""
ADD_TO_CATEGORY = """INSERT INTO category_sales (category, purchases, units, revenue, last_batch)
    VALUES (?, ?, ?, ?, ?) ON CONFLICT (category) DO UPDATE SET
    purchases = category_sales.purchases + excluded.purchases, units = category_sales.units + excluded.units,
    revenue = category_sales.revenue + excluded.revenue, last_batch = excluded.last_batch"""


def read_events(spark, folder: Path) -> DataFrame:
    """The shop's event files as a stream of lines, parsed: a bad line keeps its text and a reason."""
    return parsing.parse_json(parsing.read_json_lines(spark, folder), ECOMMERCE_EVENT_SCHEMA)


def build_category_sales(events: DataFrame) -> DataFrame:
    """Purchases, units and revenue per category in this batch: what the database adds up."""
    return (
        events.filter(F.col("event_type") == "purchase")
        .groupBy("category")
        .agg(
            F.count("*").alias("purchases"),
            F.sum("quantity").alias("units"),
            F.round(F.sum(F.col("price") * F.col("quantity")), 2).alias("revenue"),
        )
    )


def build_alerts(events: DataFrame, threshold: float = ALERT_THRESHOLD) -> DataFrame:
    """Purchases worth at least ``threshold``: the rows the alert rule matches."""
    amount = F.round(F.col("price") * F.col("quantity"), 2)
    return events.filter((F.col("event_type") == "purchase") & (amount >= threshold)).select(
        "event_id",
        "user_id",
        "product_id",
        "product_name",
        "quantity",
        amount.alias("amount"),
        "timestamp",
        F.lit(f"purchase >= {threshold:g}").alias("rule"),
    )


def start_batches(events: DataFrame, checkpoint: Path, trigger: dict, **where):
    """Hand every micro-batch to write_batch, on the driver."""
    return (
        events.writeStream.foreachBatch(
            foreach_batch(lambda batch, batch_id: write_batch(batch, batch_id, **where))
        )
        # The checkpoint also keeps the query's id: write_batch's app id, the same after a restart.
        .option("checkpointLocation", paths.uri(checkpoint))
        .queryName("shop_events_foreach_batch")
        .trigger(**trigger)
        .start()
    )


def write_batch(
    batch: DataFrame,
    batch_id: int,
    *,
    folder: Path,
    jdbc: database.Jdbc,
    kafka: str | None = None,
    topic: str = config.TOPIC_ALERTS,
    app_id: str | None = None,
) -> dict:
    """The foreachBatch function: one micro-batch to four destinations, each write idempotent."""
    # A NEW checkpoint gets a new query id and batch ids from 0 again: with a fixed app id,
    # Delta would silently skip every batch up to the old highest id.
    app_id = app_id or batch.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")
    batch.persist()  # four writes read this batch: without persist() each would parse the files again
    try:
        events = parsing.valid_records(batch, ECOMMERCE_EVENT_SCHEMA)
        count = events.count()
        version = write_delta_once(events, folder / "events", app_id, batch_id)
        sales = build_category_sales(events).orderBy("category").collect()
        applied = write_database_once(events.sparkSession, jdbc, app_id, batch_id, count, sales)
        alerts = build_alerts(events).orderBy("event_id")
        sent = (
            write_kafka(alerts, kafka, topic)
            if kafka
            else write_lines(alerts, folder / "alerts", batch_id)
        )
        bad = write_lines(
            parsing.quarantined(batch, "source_file"), folder / "quarantine", batch_id
        )
    finally:
        batch.unpersist()
    delta = (
        f"Delta v{version}"
        if version is not None
        else f"Delta skipped (txnVersion {batch_id} already committed)"
    )
    database_text = (
        f"{sum(row.purchases for row in sales)} purchases -> database "
        f"({', '.join(row.category for row in sales) or 'no category'})"
        if applied
        else f"database skipped (batch {batch_id} already applied)"
    )
    print(
        f"batch {batch_id}{'' if applied else ' (again)'}: {count} events -> {delta} | {database_text} | "
        f"{sent} alert{'s' if sent != 1 else ''} | {bad} quarantined",
        flush=True,
    )
    return {
        "events": count,
        "delta_version": version,
        "applied": applied,
        "alerts": sent,
        "quarantined": bad,
    }


def write_delta_once(events: DataFrame, table: Path, app_id: str, batch_id: int) -> int | None:
    """Append the batch unless (app id, batch id) is in the table already; the new version, or None."""
    spark, path = events.sparkSession, paths.uri(table)
    version = lambda: (
        DeltaTable.forPath(spark, path).history(1).first().version
        if DeltaTable.isDeltaTable(spark, path)
        else -1
    )  # noqa: E731
    before = version()  # a skipped write makes no new version
    # Delta keeps, per txnAppId, the highest txnVersion committed, in the same commit as the
    # data: a write whose txnVersion is not higher is skipped, atomically.
    events.write.format("delta").mode("append").option("txnAppId", app_id).option(
        "txnVersion", batch_id
    ).save(path)
    after = version()
    return after if after != before else None


def write_database_once(
    spark, jdbc: database.Jdbc, app_id: str, batch_id: int, events: int, sales: list
) -> bool:
    """Add the batch's per-category totals to the database once; False when the batch was applied before."""
    # Not DataFrame.write.jdbc: it only inserts or overwrites, and each task commits on its own.
    # A batch's totals are a few rows: on the driver, one transaction commits them with the batch id.
    rows = [(row.category, row.purchases, row.units, float(row.revenue), batch_id) for row in sales]
    return database.apply_batch_once(
        spark, jdbc, app_id, batch_id, ADD_TO_CATEGORY, rows, input_rows=events
    )


def write_kafka(alerts: DataFrame, bootstrap: str, topic: str) -> int:
    """Alerts as JSON messages keyed by event id (a replay sends them again: consumers dedupe by key)."""
    messages = alerts.select(
        F.col("event_id").alias("key"), F.to_json(F.struct("*")).alias("value")
    )
    messages.write.format("kafka").options(**kafka.spark_options(bootstrap)).option(
        "topic", topic
    ).save()
    return alerts.count()


def write_lines(rows: DataFrame, folder: Path, batch_id: int) -> int:
    """Rows as JSON lines in batch-<id>.json: a replay rewrites the same file with the same lines."""
    lines = [row[0] for row in rows.select(F.to_json(F.struct("*"))).collect()]
    if lines:
        files.write_atomically(
            folder, f"batch-{batch_id:06d}.json", "".join(line + "\n" for line in lines)
        )
    return len(lines)


def read_outputs(spark, folder: Path, jdbc: database.Jdbc) -> dict:
    """What the destinations hold now: the Delta table, the database's tables, the alert and quarantine files."""
    table = paths.uri(folder / "events")
    exists = DeltaTable.isDeltaTable(spark, table)
    sales = database.query(spark, jdbc, "SELECT * FROM category_sales ORDER BY category")
    lines = {
        name: [
            line
            for path in sorted((folder / name).glob("*.json"))
            for line in path.read_text().splitlines()
        ]
        for name in ("alerts", "quarantine")
    }
    return {
        "delta_rows": spark.read.format("delta").load(table).count() if exists else 0,
        "delta_versions": DeltaTable.forPath(spark, table).history().count() if exists else 0,
        "sales": [
            (*row[:3], round(row[3], 2), row[4]) for row in sales
        ],  # PostgreSQL has no ROUND(double, n)
        "applied": database.query(spark, jdbc, "SELECT COUNT(*) FROM applied_batches")[0][0],
        **lines,
    }


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True)
    database.add_flags(parser, "the SQLite file output/10_foreach_batch/shop.db")
    parser.add_argument(
        "--alerts",
        choices=("file", "kafka"),
        default="file",
        help=f"alerts as JSON files, or to the Kafka topic '{config.TOPIC_ALERTS}' (default: file)",
    )
    args = parser.parse_args(argv)
    folder, checkpoint = paths.output_for(LESSON), checkpoint_root(LESSON, args) / "events"
    jdbc = database.from_flags(args, f"jdbc:sqlite:{folder / 'shop.db'}")
    to_kafka = args.alerts == "kafka"
    with (
        kafka_broker.kafka_for_lesson() if to_kafka else nullcontext() as bootstrap,
        lesson_session(
            LESSON,
            args,
            delta=True,
            jdbc=True,
            kafka=to_kafka,
            extra_packages=database.packages_for(jdbc.url),
        ) as spark,
    ):
        database.create_tables(spark, jdbc, [CATEGORY_SALES])
        if bootstrap:
            kafka.ensure_topics(bootstrap, [config.TOPIC_ALERTS])
        where = {"folder": folder, "jdbc": jdbc, "kafka": bootstrap}

        banner("1. One query, four destinations per micro-batch")
        say(f"""Each micro-batch of shop events goes to a Delta table, to per-category totals in
            {jdbc.display()}, to {"the Kafka topic " + config.TOPIC_ALERTS if bootstrap else "alert files"}
            for purchases of at least {ALERT_THRESHOLD:g}, and unusable lines to a quarantine. A
            second run reads only the files that arrived since the first.""")
        events = read_events(spark, paths.ECOMMERCE_DIR)
        with simulators.file_input_for_lesson(*SIMULATOR, paths.ECOMMERCE_DIR, args) as files:
            run_queries(
                [start_batches(events, checkpoint, files.trigger(TRIGGER_INTERVAL), **where)],
                args,
                until=files.done,
            )
        # Read what came after a short --duration, then stop: the replay below finds no new input.
        finish([start_batches(events, checkpoint, {"availableNow": True}, **where)])

        banner("2. What landed where")
        before = read_outputs(spark, folder, jdbc)
        print(
            f"Delta table {paths.display(folder / 'events')}: {before['delta_rows']} rows in "
            f"{before['delta_versions']} versions\ncategory_sales in {jdbc.display()}:"
        )
        narration.print_table(
            ("category", "purchases", "units", "revenue", "last_batch"), before["sales"]
        )
        print(f"applied_batches: {before['applied']} batch ids recorded")
        print(
            f"Alerts went to the Kafka topic '{config.TOPIC_ALERTS}'"
            if bootstrap
            else f"Alerts: {len(before['alerts'])} lines in {paths.display(folder / 'alerts')}"
            + "".join(f"\n  {line}" for line in before["alerts"][:1])
        )
        print(f"Quarantine: {len(before['quarantine'])} lines, each with its reason")

        banner("3. A crash before the commit: Spark replays the batch, nothing doubles")
        replayed = checkpoints.forget_last_commit(checkpoint)
        if replayed is None:
            say("No micro-batch has run yet, so there is nothing to replay: run the lesson again.")
            return
        print(
            f"Deleted {paths.display(checkpoint)}/commits/{replayed}: to Spark, batch {replayed} never finished."
        )
        finish([start_batches(events, checkpoint, {"availableNow": True}, **where)])
        after = read_outputs(spark, folder, jdbc)
        print(
            f"Delta rows: {before['delta_rows']} -> {after['delta_rows']}; database purchases: "
            f"{sum(row[1] for row in before['sales'])} -> {sum(row[1] for row in after['sales'])}; "
            + (
                f"alerts: sent to '{config.TOPIC_ALERTS}' again"
                if bootstrap
                else f"alert lines: {len(before['alerts'])} -> {len(after['alerts'])}"
            )
        )
        say("""Spark ran the batch again with the same id and the same input, exactly what it does
            after a crash between the sink's write and the checkpoint's commit. Delta saw
            (txnAppId, txnVersion) in its log and skipped the append; the database saw the batch
            id in applied_batches and rolled back. Without those guards every replay would add
            the batch a second time: foreachBatch alone is only at-least-once.""")
        say(
            """Kafka is the exception: the replay sent the batch's alerts again. They carry the
            event id as their key, so a consumer (or a compacted topic) can drop the repeats;
            exactly-once into Kafka would need Kafka transactions."""
            if bootstrap
            else "A batch's alert file is named after its id: a replay rewrites it with the same lines."
        )


if __name__ == "__main__":
    run_lesson(main)

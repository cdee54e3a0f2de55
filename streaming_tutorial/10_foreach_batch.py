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
  - ``foreach`` hands your code one ROW at a time, on the executors: a function
    (``.foreach(save_alert)``), or a ForeachWriter whose ``open(partition_id, epoch_id)`` opens
    a connection and a transaction per partition, ``process(row)`` inserts a row and
    ``close(error)`` commits or rolls back. foreach is at-least-once, and a replayed epoch may
    come back split into other partitions: a writer is idempotent by a key from the data (the
    event id: ``INSERT ... ON CONFLICT (event_id) DO NOTHING``), never by skipping a (partition,
    epoch). foreach is the general-purpose sink of real-time mode (in Spark 4.2 that mode
    refuses foreachBatch); in micro-batch mode foreachBatch costs less per row.

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

Practise
  python course.py exercises check 10.1   Totals a replay cannot double (build)
  python course.py exercises check 10.2   Alerts sent twice (fix)

What you'll see
  (a first run on an empty folder, which starts the simulator; counts vary with timing)
  batch 0: 20 events -> Delta v0 | 3 purchases -> database (Electronics) | 3 alerts | 0 quarantined
  batch 1: 60 events -> Delta v1 | 8 purchases -> database (Electronics, Fashion, Home, ...
  Delta table output/10_foreach_batch/events: 80 rows in 2 versions
  category_sales in jdbc:sqlite:output/10_foreach_batch/shop.db:
    category     purchases  units  revenue  last_batch
    Electronics  4          10     7749.9   1
  ...
  applied_batches: 2 batch ids recorded
  Alerts: 3 lines in output/10_foreach_batch/alerts
  ...
  Deleted checkpoints/10_foreach_batch/events/commits/1: to Spark, batch 1 never finished.
  batch 1 (again): 60 events -> Delta skipped (txnVersion 1 already committed) | database ...
  Delta rows: 80 -> 80; database purchases: 11 -> 11; alert lines: 3 -> 3
  ...
  ForeachWriter -> output/10_foreach_batch/alerts_foreach_writer.db: 3 alerts, one row per event id
    epoch  partition  rows  new
    0      0          3     3
    0      1          0     0
  Function form -> output/10_foreach_batch/alerts_foreach_function: 3 files, one per alert
  Deleted the last commit of both foreach queries: to Spark, epoch 0 never finished.
  ForeachWriter: 3 -> 3 alerts, 0 changed; the replay's 2 tasks got 3 rows, 0 new
  Function form: 3 -> 3 files, 3 written again, 0 with other text
"""

from __future__ import annotations

import os
import sqlite3
import sys
from contextlib import closing, nullcontext
from pathlib import Path
from typing import Sequence

from delta.tables import DeltaTable
from pyspark import cloudpickle
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from common import config, database, parsing, paths
from common.batch_ids import query_id
from common.sales import build_category_sales
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from infra import checkpoints, cli, files, kafka, kafka_broker, simulators
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
from teaching import narration

LESSON = "10_foreach_batch"
# An upper bound: the lesson stops once the simulator is done and its files are read.
DEFAULT_DURATION = 60
TRIGGER_INTERVAL = "3 seconds"
ALERT_THRESHOLD = 500.0  # a purchase worth at least this much (price x quantity) raises an alert
SIMULATOR = ("ecommerce", "generate_ecommerce_events.py", ["--count", "4", "--interval", "3"])
# The replay guard: one row per (query id, batch id) whose writes the database committed.
APPLIED_BATCHES = """CREATE TABLE IF NOT EXISTS applied_batches (
    app_id VARCHAR(64) NOT NULL,
    batch_id BIGINT NOT NULL,
    input_rows BIGINT NOT NULL,
    PRIMARY KEY (app_id, batch_id))"""
# Claims a batch: it changes no row (0) when the batch was claimed before, i.e. on a replay.
CLAIM_BATCH = (
    "INSERT INTO applied_batches (app_id, batch_id, input_rows) VALUES (?, ?, ?) "
    "ON CONFLICT (app_id, batch_id) DO NOTHING"
)
# Per-category totals to which each batch ADDS its own, in SQL that SQLite and PostgreSQL
# both accept.
CATEGORY_SALES = """CREATE TABLE IF NOT EXISTS category_sales (
    category VARCHAR(64) PRIMARY KEY, purchases BIGINT NOT NULL, units BIGINT NOT NULL,
    revenue DOUBLE PRECISION NOT NULL, last_batch BIGINT NOT NULL)"""
ADD_TO_CATEGORY = """INSERT INTO category_sales (category, purchases, units, revenue, last_batch)
    VALUES (?, ?, ?, ?, ?) ON CONFLICT (category) DO UPDATE SET
    purchases = category_sales.purchases + excluded.purchases,
    units = category_sales.units + excluded.units,
    revenue = category_sales.revenue + excluded.revenue,
    last_batch = excluded.last_batch"""
# writeStream.foreach's two sinks: their outputs under output/10_foreach_batch/, and their
# checkpoints under checkpoints/10_foreach_batch/.
FOREACH_WRITER = "alerts_foreach_writer"  # the ForeachWriter: the SQLite file <FOREACH_WRITER>.db
FOREACH_FUNCTION = "alerts_foreach_function"  # the function form: <event id>.json
# The ForeachWriter's alerts, keyed by the event id: a second insert of an alert changes nothing.
ALERTS_TABLE = """CREATE TABLE IF NOT EXISTS alerts (
    event_id TEXT PRIMARY KEY,
    alert TEXT NOT NULL)"""
INSERT_ALERT = (
    "INSERT INTO alerts (event_id, alert) VALUES (?, ?) ON CONFLICT (event_id) DO NOTHING"
)
# One row per task the writer committed: the rows its (epoch, partition) got, and how many of
# them were new. A log to read, not a replay guard (see AlertTableWriter.open).
TASKS_TABLE = """CREATE TABLE IF NOT EXISTS writer_tasks (
    epoch_id INTEGER NOT NULL,
    partition_id INTEGER NOT NULL,
    received INTEGER NOT NULL,
    inserted INTEGER NOT NULL)"""
LOG_TASK = (
    "INSERT INTO writer_tasks (epoch_id, partition_id, received, inserted) VALUES (?, ?, ?, ?)"
)
# SQLite lets one transaction write at a time: a task waits this long for the others' commits.
SQLITE_TIMEOUT_SECONDS = 60


def read_events(spark, folder: Path) -> DataFrame:
    """The shop's event files as a stream of lines, parsed: a bad line keeps its text and a
    reason."""
    folder.mkdir(parents=True, exist_ok=True)  # a file source needs its folder to exist
    lines = (
        # Text, not .json(): a line that is no event is kept (and quarantined), never lost.
        spark.readStream.format("text")
        .load(paths.uri(folder))
        # _metadata is the hidden per-file column of file sources: the file a line came from.
        .withColumn("source_file", F.col("_metadata.file_name"))
    )
    # Lesson 03's parsing: the event's fields, and a quarantine_reason (null for a good one).
    return parsing.parse_json(lines, ECOMMERCE_EVENT_SCHEMA)


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
        # The checkpoint also keeps the query's id: write_batch's app id, the same after a
        # restart.
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
    bootstrap: str | None = None,
    topic: str = config.TOPIC_ALERTS,
    app_id: str | None = None,
) -> dict:
    """The foreachBatch function: one micro-batch to four destinations, each write idempotent.

    Alerts go to the Kafka topic when ``bootstrap`` names a broker, to files otherwise.
    """
    # The query's id, from the checkpoint: with the batch id it names this batch's output for
    # good, so a replay after a crash is recognised (common/batch_ids.py; it reads the id through
    # sparkContext, which classic Spark has and Spark Connect does not). A NEW checkpoint gets
    # a new query id and batch ids from 0 again: with a fixed app id, Delta would silently skip
    # every batch up to the old highest id.
    app_id = app_id or query_id(batch)
    # Four writes read this batch: without persist() each would parse the files again.
    batch.persist()
    try:
        events = parsing.valid_records(batch, ECOMMERCE_EVENT_SCHEMA)
        count = events.count()
        version = write_delta_once(events, folder / "events", app_id, batch_id)
        sales = build_category_sales(events).orderBy("category").collect()
        applied = write_database_once(events.sparkSession, jdbc, app_id, batch_id, count, sales)
        alerts = build_alerts(events).orderBy("event_id")
        if bootstrap:
            sent = write_kafka(alerts, bootstrap, topic)
        else:
            sent = write_lines(alerts, folder / "alerts", batch_id)
        bad = parsing.quarantined(batch, "source_file")
        quarantined = write_lines(bad, folder / "quarantine", batch_id)
    finally:
        batch.unpersist()
    report = {
        "events": count,
        "delta_version": version,
        "applied": applied,
        "alerts": sent,
        "quarantined": quarantined,
    }
    print(batch_summary(batch_id, report, sales), flush=True)
    return report


def write_delta_once(events: DataFrame, table: Path, app_id: str, batch_id: int) -> int | None:
    """Append the batch unless (app id, batch id) is in the table already: the new version, or
    None when Delta skipped the write."""
    spark = events.sparkSession
    path = paths.uri(table)
    before = latest_version(spark, path)  # a skipped write makes no new version
    # Delta keeps, per txnAppId, the highest txnVersion committed, in the same commit as the
    # data: a write whose txnVersion is not higher is skipped, atomically.
    (
        events.write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", batch_id)
        .save(path)
    )
    after = latest_version(spark, path)
    if after == before:
        return None
    return after


def latest_version(spark, path: str) -> int:
    """The Delta table's newest version; -1 before its first commit."""
    if not DeltaTable.isDeltaTable(spark, path):
        return -1
    return DeltaTable.forPath(spark, path).history(1).first().version


def write_database_once(
    spark, jdbc: database.Jdbc, app_id: str, batch_id: int, events: int, sales: list
) -> bool:
    """Add the batch's per-category totals to the database once; False when the batch was
    applied before."""
    # Not DataFrame.write.jdbc: it only inserts or overwrites, and each task commits on its
    # own. A batch's totals are a few rows: on the driver, one transaction commits them with
    # the batch id.
    rows = [(row.category, row.purchases, row.units, float(row.revenue), batch_id) for row in sales]
    return apply_batch_once(spark, jdbc, app_id, batch_id, ADD_TO_CATEGORY, rows, input_rows=events)


def apply_batch_once(
    spark,
    jdbc: database.Jdbc,
    app_id: str,
    batch_id: int,
    sql: str,
    rows: Sequence[Sequence],
    input_rows: int = 0,
) -> bool:
    """Run ``sql`` once per row, in one transaction with the claim of (app_id, batch_id).

    Returns False, and changes nothing, when the batch was claimed before: a replay.
    The claim and the writes commit together or not at all, so a crash in between
    leaves the batch unclaimed and its replay applies it.
    """
    with database.connect(spark, jdbc) as connection:
        # One transaction: nothing is visible, or kept, until commit().
        connection.setAutoCommit(False)
        try:
            claimed = database.execute(connection, CLAIM_BATCH, (app_id, batch_id, input_rows))
            if claimed == 0:  # the batch id is there already: this batch was applied
                connection.rollback()
                return False
            for row in rows:
                database.execute(connection, sql, row)
            connection.commit()
            return True
        except Exception:
            connection.rollback()
            raise


def write_kafka(alerts: DataFrame, bootstrap: str, topic: str) -> int:
    """Alerts as JSON messages keyed by event id (a replay sends them again: consumers dedupe
    by key)."""
    messages = alerts.select(
        F.col("event_id").alias("key"),
        F.to_json(F.struct("*")).alias("value"),
    )
    (
        messages.write.format("kafka")
        # The broker's address, and a secured cluster's login.
        .options(**kafka.spark_options(bootstrap))
        .option("topic", topic)
        .save()
    )
    return alerts.count()


def write_lines(rows: DataFrame, folder: Path, batch_id: int) -> int:
    """Rows as JSON lines in batch-<id>.json: a replay rewrites the same file with the same
    lines."""
    lines = [row[0] for row in rows.select(F.to_json(F.struct("*"))).collect()]
    if lines:
        text = "".join(line + "\n" for line in lines)
        # Written elsewhere, then renamed: a reader never sees half a file.
        files.write_atomically(folder, f"batch-{batch_id:06d}.json", text)
    return len(lines)


def batch_summary(batch_id: int, report: dict, sales: list) -> str:
    """One line per batch for the learner: what went where, or what a replay skipped."""
    if report["delta_version"] is None:
        delta = f"Delta skipped (txnVersion {batch_id} already committed)"
    else:
        delta = f"Delta v{report['delta_version']}"
    if report["applied"]:
        purchases = sum(row.purchases for row in sales)
        categories = ", ".join(row.category for row in sales) or "no category"
        database_text = f"{purchases} purchases -> database ({categories})"
        again = ""
    else:
        database_text = f"database skipped (batch {batch_id} already applied)"
        again = " (again)"
    alerts = report["alerts"]
    plural = "s" if alerts != 1 else ""
    return (
        f"batch {batch_id}{again}: {report['events']} events -> {delta} | {database_text} | "
        f"{alerts} alert{plural} | {report['quarantined']} quarantined"
    )


def read_outputs(spark, folder: Path, jdbc: database.Jdbc) -> dict:
    """What the destinations hold now: the Delta table, the database's tables, the alert and
    quarantine files."""
    table = paths.uri(folder / "events")
    exists = DeltaTable.isDeltaTable(spark, table)
    sales = database.query(spark, jdbc, "SELECT * FROM category_sales ORDER BY category")
    applied = database.query(spark, jdbc, "SELECT COUNT(*) FROM applied_batches")
    return {
        "delta_rows": spark.read.format("delta").load(table).count() if exists else 0,
        "delta_versions": DeltaTable.forPath(spark, table).history().count() if exists else 0,
        # Rounded here: PostgreSQL has no ROUND(double, n).
        "sales": [(*row[:3], round(row[3], 2), row[4]) for row in sales],
        "applied": applied[0][0],
        "alerts": lines_in(folder / "alerts"),
        "quarantine": lines_in(folder / "quarantine"),
    }


def lines_in(folder: Path) -> list[str]:
    """Every line of the JSON files write_lines made in ``folder``, in batch order."""
    return [
        line for path in sorted(folder.glob("*.json")) for line in path.read_text().splitlines()
    ]


# writeStream.foreach: the same alerts, a row at a time, on the executors.


def build_alert_messages(events: DataFrame, threshold: float = ALERT_THRESHOLD) -> DataFrame:
    """The alerts of the parsed event stream as messages for a row-at-a-time sink: the event id
    as the key, the alert as one JSON line (the line write_lines writes)."""
    alerts = build_alerts(parsing.valid_records(events, ECOMMERCE_EVENT_SCHEMA), threshold)
    return alerts.select(
        F.col("event_id").alias("key"),
        # Made here, by Spark: the timestamp in the session's time zone, as in the alert files.
        F.to_json(F.struct("*")).alias("value"),
    )


def start_alert_writer(alerts: DataFrame, checkpoint: Path, trigger: dict, sqlite_file: Path):
    """Hand each alert to an AlertTableWriter: one copy per partition and epoch, on the
    executors."""
    # The tables exist before the first task: made once, here on the driver.
    create_alert_tables(sqlite_file)
    send_writers_by_value()
    return (
        # An instance: Spark calls its open(), process() for each row, then close(). Anything
        # callable is taken for the function form, a class too: foreach(AlertTableWriter)
        # would build a writer from each row and write nothing.
        alerts.writeStream.foreach(AlertTableWriter(sqlite_file))
        .option("checkpointLocation", paths.uri(checkpoint))
        .queryName("shop_alerts_foreach_writer")
        # Real-time mode (a Kafka source) takes .outputMode("update").trigger(realTime="5 seconds")
        # and a writer that commits each row in process(): this one holds its transaction until
        # close().
        .trigger(**trigger)
        .start()
    )


def create_alert_tables(sqlite_file: Path) -> None:
    """The ForeachWriter's SQLite file and its two tables, if they are not there yet."""
    sqlite_file.parent.mkdir(parents=True, exist_ok=True)
    # isolation_level=None: each statement commits by itself.
    with closing(sqlite3.connect(sqlite_file, isolation_level=None)) as connection:
        connection.execute(ALERTS_TABLE)
        connection.execute(TASKS_TABLE)


class AlertTableWriter:
    """A ForeachWriter: each partition of each epoch inserts its alerts in one transaction,
    keyed by event id, so an alert written twice is stored once.

    Spark needs process(); open() and close() are optional (pyspark 4.2 looks for them). It
    pickles this object and each task (one partition of one epoch) gets a fresh copy on an
    executor: so the connection is made in open(), never in __init__ (a connection cannot be
    pickled), and what must outlast a task lives in the database, never in an attribute.
    Python's sqlite3 on purpose: it runs in the executors' Python workers. Here they share this
    machine's disk; on a cluster the store must be one every executor reaches (PostgreSQL, say,
    with the same INSERT ... ON CONFLICT DO NOTHING).
    """

    def __init__(self, sqlite_file: Path):
        self.sqlite_file = str(sqlite_file)
        self.connection: sqlite3.Connection | None = None
        self.epoch_id = -1
        self.partition_id = -1
        self.received = 0
        self.inserted = 0

    def open(self, partition_id: int, epoch_id: int) -> bool:
        """Called first, per partition and epoch: a connection and a transaction for its rows."""
        # The ids name this task in the log, nothing more. They are no replay guard: Spark does
        # not promise that a replayed epoch is split into the same partitions (another core
        # count, another spark.sql.files.maxPartitionBytes; its ForeachWriter docs, SPARK-28650),
        # so "skip a (partition, epoch) already written" can skip rows it never wrote. The event
        # id makes a replay harmless.
        self.epoch_id = epoch_id
        self.partition_id = partition_id
        self.received = 0
        self.inserted = 0
        # isolation_level=None: the transaction is the one this code begins and ends.
        self.connection = sqlite3.connect(
            self.sqlite_file, timeout=SQLITE_TIMEOUT_SECONDS, isolation_level=None
        )
        # IMMEDIATE takes SQLite's one write lock now: the other tasks wait their turn.
        self.connection.execute("BEGIN IMMEDIATE")
        return True  # every row, every time: Spark skips the rows for anything false

    def process(self, row: Row) -> None:
        """Called for each row of the partition: insert it, unless its event id is there."""
        cursor = self.connection.execute(INSERT_ALERT, (row.key, row.value))
        self.received += 1
        self.inserted += cursor.rowcount  # 1 for a new event id, 0 for one written before

    def close(self, error: BaseException | None) -> None:
        """Called last; ``error`` is what stopped process(): commit the partition, or nothing."""
        try:
            if error is None:
                self.connection.execute(
                    LOG_TASK, (self.epoch_id, self.partition_id, self.received, self.inserted)
                )
                self.connection.execute("COMMIT")
            else:
                # A failed task leaves nothing: Spark retries it, and the retry writes the rows.
                self.connection.execute("ROLLBACK")
        finally:
            self.connection.close()


def read_alert_tables(sqlite_file: Path) -> dict:
    """What the ForeachWriter's tables hold: {event id: alert}, and its tasks, oldest first."""
    with closing(sqlite3.connect(sqlite_file)) as connection:
        alerts = connection.execute("SELECT event_id, alert FROM alerts ORDER BY event_id")
        by_event_id = dict(alerts.fetchall())
        tasks = connection.execute(
            "SELECT epoch_id, partition_id, received, inserted FROM writer_tasks ORDER BY rowid"
        )
        return {"alerts": by_event_id, "tasks": tasks.fetchall()}


def newest_epoch(tasks: list[tuple]) -> list[tuple]:
    """The rows of the ForeachWriter's log (read_alert_tables' tasks) of its newest epoch, by
    partition: its tasks run at once and commit in any order."""
    if not tasks:
        return []
    newest = max(task[0] for task in tasks)
    return sorted((task for task in tasks if task[0] == newest), key=lambda task: task[1])


def compare_alert_tables(before: dict, after: dict) -> str:
    """What a replay did to the ForeachWriter's tables (two read_alert_tables results)."""
    changed = [key for key, text in before["alerts"].items() if after["alerts"].get(key) != text]
    replayed = after["tasks"][len(before["tasks"]) :]
    received = sum(task[2] for task in replayed)
    inserted = sum(task[3] for task in replayed)
    tasks = "task" if len(replayed) == 1 else "tasks"
    rows = "row" if received == 1 else "rows"
    return (
        f"{len(before['alerts'])} -> {len(after['alerts'])} alerts, {len(changed)} changed; "
        f"the replay's {len(replayed)} {tasks} got {received} {rows}, {inserted} new"
    )


def replace_file(path: str, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: into a hidden file beside it, then rename.

    Plain Python on purpose: it runs in the executors' Python workers. (Here the executors
    share this machine's disk; on a cluster, write where every executor reaches: a database,
    object storage.)"""
    folder, name = os.path.split(path)
    os.makedirs(folder, exist_ok=True)
    # The process id keeps two tasks that write the same file at once apart.
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    with open(temporary, "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(temporary, path)


def start_alerts_by_function(alerts: DataFrame, checkpoint: Path, trigger: dict, folder: Path):
    """Hand each alert to save_alert, one call per row, on the executors: the function form."""
    destination = str(folder)

    def save_alert(row: Row) -> None:
        # A function gets the row and nothing else: no open() or close(), so anything it needs
        # (a file, a connection) it opens per row. A replay calls it again for every row of the
        # epoch: named after the row's own key, the file is rewritten with the same text; an
        # append to a log, a counter or an e-mail would repeat.
        replace_file(os.path.join(destination, f"{row.key}.json"), row.value + "\n")

    send_writers_by_value()
    return (
        alerts.writeStream.foreach(save_alert)
        .option("checkpointLocation", paths.uri(checkpoint))
        .queryName("shop_alerts_foreach_function")
        .trigger(**trigger)
        .start()
    )


def send_writers_by_value() -> None:
    """Imported (the tests), this file is a module Python workers cannot import (its name starts
    with a digit): have cloudpickle send the writer and save_alert by value, as for __main__."""
    if __name__ != "__main__":
        cloudpickle.register_pickle_by_value(sys.modules[__name__])


def run_foreach_queries(alerts: DataFrame, checkpoint_dir: Path, folder: Path) -> None:
    """Both foreach forms on the alerts: read what has arrived, write it, then stop."""
    finish(
        [
            start_alert_writer(
                alerts,
                checkpoint_dir / FOREACH_WRITER,
                {"availableNow": True},
                folder / f"{FOREACH_WRITER}.db",
            ),
            start_alerts_by_function(
                alerts,
                checkpoint_dir / FOREACH_FUNCTION,
                {"availableNow": True},
                folder / FOREACH_FUNCTION,
            ),
        ]
    )


def stored_files(folder: Path) -> dict[str, tuple[int, str]]:
    """The files a foreach sink wrote in ``folder``, by name (below the folder): (inode, text).

    A file written again gets a new inode (replace_file renames a new file onto it), even with
    the same text: how a replay shows which files it wrote again."""
    return {
        path.relative_to(folder).as_posix(): (path.stat().st_ino, path.read_text(encoding="utf-8"))
        for path in sorted(folder.rglob("*.json"))
    }


def compare_files(before: dict, after: dict) -> str:
    """What a replay did to a foreach sink's files (two stored_files results), in one line."""
    again = [
        name for name, (inode, _) in before.items() if name in after and after[name][0] != inode
    ]
    changed = [
        name for name, (_, text) in before.items() if name in after and after[name][1] != text
    ]
    return (
        f"{len(before)} -> {len(after)} files, {len(again)} written again, "
        f"{len(changed)} with other text"
    )


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
    folder = paths.output_for(LESSON)
    checkpoint = checkpoint_root(LESSON, args) / "events"
    jdbc = database.from_flags(args, f"jdbc:sqlite:{folder / 'shop.db'}")
    to_kafka = args.alerts == "kafka"
    # A broker only when the alerts go to Kafka: the default run needs none.
    broker = kafka_broker.kafka_for_lesson() if to_kafka else nullcontext()
    with (
        broker as bootstrap,
        lesson_session(
            LESSON,
            args,
            delta=True,
            jdbc=True,
            kafka=to_kafka,
            extra_packages=database.packages_for(jdbc.url),
        ) as spark,
    ):
        database.create_tables(spark, jdbc, [APPLIED_BATCHES, CATEGORY_SALES])
        if bootstrap:
            kafka.ensure_topics(bootstrap, [config.TOPIC_ALERTS])
            alerts_destination = "the Kafka topic " + config.TOPIC_ALERTS
        else:
            alerts_destination = "alert files"
        where = {"folder": folder, "jdbc": jdbc, "bootstrap": bootstrap}

        banner("1. One query, four destinations per micro-batch")
        say(f"""Each micro-batch of shop events goes to a Delta table, to per-category totals
            in {jdbc.display()}, to {alerts_destination} for purchases of at least
            {ALERT_THRESHOLD:g}, and unusable lines to a quarantine. A second run reads only
            the files that arrived since the first.""")
        events = read_events(spark, paths.ECOMMERCE_DIR)
        with simulators.file_input_for_lesson(*SIMULATOR, paths.ECOMMERCE_DIR, args) as shop_files:
            trigger = shop_files.trigger(TRIGGER_INTERVAL)
            run_queries(
                [start_batches(events, checkpoint, trigger, **where)],
                args,
                until=shop_files.done,
            )
        # Read what came after a short --duration, then stop: the replay below finds no new
        # input.
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
        if bootstrap:
            print(f"Alerts went to the Kafka topic '{config.TOPIC_ALERTS}'")
        else:
            alerts_folder = paths.display(folder / "alerts")
            print(f"Alerts: {len(before['alerts'])} lines in {alerts_folder}")
            for line in before["alerts"][:1]:
                print(f"  {line}")
        print(f"Quarantine: {len(before['quarantine'])} lines, each with its reason")

        banner("3. A crash before the commit: Spark replays the batch, nothing doubles")
        replayed = checkpoints.forget_last_commit(checkpoint)
        if replayed is None:
            say("No micro-batch has run yet, so there is nothing to replay: run the lesson again.")
            return
        print(
            f"Deleted {paths.display(checkpoint)}/commits/{replayed}: "
            f"to Spark, batch {replayed} never finished."
        )
        finish([start_batches(events, checkpoint, {"availableNow": True}, **where)])
        after = read_outputs(spark, folder, jdbc)
        purchases_before = sum(row[1] for row in before["sales"])
        purchases_after = sum(row[1] for row in after["sales"])
        if bootstrap:
            alerts_text = f"alerts: sent to '{config.TOPIC_ALERTS}' again"
        else:
            alerts_text = f"alert lines: {len(before['alerts'])} -> {len(after['alerts'])}"
        print(
            f"Delta rows: {before['delta_rows']} -> {after['delta_rows']}; "
            f"database purchases: {purchases_before} -> {purchases_after}; {alerts_text}"
        )
        say("""Spark ran the batch again with the same id and the same input, exactly what it does
            after a crash between the sink's write and the checkpoint's commit. Delta saw
            (txnAppId, txnVersion) in its log and skipped the append; the database saw the batch
            id in applied_batches and rolled back. Without those guards every replay would add
            the batch a second time: foreachBatch alone is only at-least-once.""")
        if bootstrap:
            say("""Kafka is the exception: the replay sent the batch's alerts again. They carry
                the event id as their key, so a consumer (or a compacted topic) can drop the
                repeats; exactly-once into Kafka would need Kafka transactions.""")
        else:
            say(
                "A batch's alert file is named after its id: a replay rewrites it with the "
                "same lines."
            )

        banner("4. Row at a time: writeStream.foreach, made idempotent by the event id")
        say("""foreachBatch gives the driver a whole micro-batch; foreach gives your code one ROW
            at a time, on the executors. Two forms, both on the alerts of the same input: a
            function, called once per row, and a ForeachWriter object whose open(partition_id,
            epoch_id) comes first for each partition of each epoch (the batch id) and opens a
            connection and a transaction, then process(row) inserts each row, then close(error)
            commits, or rolls back after an error.""")
        alerts = build_alert_messages(events)
        run_foreach_queries(alerts, checkpoint.parent, folder)
        sqlite_file = folder / f"{FOREACH_WRITER}.db"
        function_folder = folder / FOREACH_FUNCTION
        by_writer = read_alert_tables(sqlite_file)
        by_function = stored_files(function_folder)
        print(
            f"ForeachWriter -> {paths.display(sqlite_file)}: {len(by_writer['alerts'])} alerts, "
            "one row per event id"
        )
        # The newest epoch's tasks: a re-run adds one epoch per run that found new input.
        narration.print_table(
            ("epoch", "partition", "rows", "new"), newest_epoch(by_writer["tasks"])
        )
        print(
            f"Function form -> {paths.display(function_folder)}: {len(by_function)} files, "
            "one per alert"
        )
        replayed = checkpoints.forget_last_commit(checkpoint.parent / FOREACH_WRITER)
        checkpoints.forget_last_commit(checkpoint.parent / FOREACH_FUNCTION)
        if replayed is None:
            say("No alert epoch has run yet, so there is nothing to replay: run the lesson again.")
            return
        print(
            "Deleted the last commit of both foreach queries: to Spark, "
            f"epoch {replayed} never finished."
        )
        run_foreach_queries(alerts, checkpoint.parent, folder)
        print(f"ForeachWriter: {compare_alert_tables(by_writer, read_alert_tables(sqlite_file))}")
        print(f"Function form: {compare_files(by_function, stored_files(function_folder))}")
        say(f"""Spark ran epoch {replayed} again and every task got its rows again: foreach is
            at-least-once. The writer's INSERT ... ON CONFLICT (event_id) DO NOTHING found each
            event id in the table and changed nothing, so a replay, or a task retried after its
            commit, stores each alert once. The function form rewrote every alert's file:
            harmless for the same reason, each file is named after the event id and gets the
            same text.""")
        say("""open() returns True every time: partition_id and epoch_id name a task (here, a
            row of the log), they are no replay guard. pyspark 4.2's foreach docstring still
            says a (partition, epoch) holds the same rows in micro-batch mode; Spark's Scala
            ForeachWriter documentation (since 3.0, SPARK-28650) says deduplication on them
            cannot be achieved: a replayed epoch may be split into other partitions (another
            core count, another spark.sql.files.maxPartitionBytes, another executor layout),
            and a guard that skips a (partition, epoch) it has seen skips rows it never wrote.
            Here the replay split the epoch as the first run did; lesson 16 (section 6, "foreach
            after a kill") kills a query between two partitions and replays the epoch with
            another partitioning: the guard loses rows, a writer keyed by the data does not.""")
        say("""Where foreach fits: it is the general-purpose sink of real-time mode (lesson 13).
            In Spark 4.2 real-time mode writes to Kafka, the console and foreach only, and
            refuses foreachBatch (STREAMING_REAL_TIME_MODE.SINK_NOT_SUPPORTED). There a writer
            should commit each row in process(), keyed so that writing it twice is harmless: a
            transaction held until close() would hide the rows for the whole long batch. In
            micro-batch mode prefer foreachBatch: foreach ships every row to a Python worker
            and makes one Python call per row, where foreachBatch hands the whole batch to
            Spark's bulk writers (Delta, JDBC, Kafka) and can commit it in one transaction with
            its batch id, as section 3 did.""")


if __name__ == "__main__":
    run_lesson(main)

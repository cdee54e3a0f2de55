"""10 · foreachBatch: one micro-batch, several destinations, and no duplicates on replay.

What you'll learn
  - ``foreachBatch`` hands you each micro-batch as an ordinary DataFrame plus its batch id:
    write it anywhere a batch job can (a Delta table, a database over JDBC, files, Kafka).
  - ``persist()`` the batch when it feeds several writes (else each write re-reads the
    input), ``unpersist()`` after.
  - foreachBatch is at-least-once: after a crash Spark runs the last batch AGAIN with the
    same id. Make each write idempotent: Delta's ``txnAppId``/``txnVersion`` options, a
    database transaction that records the batch id, files named after the batch id.
  - Spark's JDBC writer cannot upsert; a JDBC connection on the driver, in one
    transaction, can (``INSERT ... ON CONFLICT ... DO UPDATE``: SQLite and PostgreSQL).

Run
  python streaming_tutorial/10_foreach_batch.py                   # SQLite file, alerts as files
  python streaming_tutorial/10_foreach_batch.py --available-now   # only the files there now
  python streaming_tutorial/10_foreach_batch.py --alerts kafka    # alerts to the 'alerts' topic
  python streaming_tutorial/10_foreach_batch.py \\
      --jdbc-url jdbc:postgresql://localhost:5432/shop --jdbc-user shop --jdbc-password secret
  It needs the shop simulator and starts it when it is not running; to run it yourself,
  in a second terminal:
    python data_generators/generate_ecommerce_events.py --count 20 --interval 3
    python streaming_tutorial/10_foreach_batch.py --no-simulator --duration 60
  Outputs: output/10_foreach_batch/ (events = Delta table, shop.db = SQLite, alerts/).
  --reset deletes those; a PostgreSQL database keeps its tables (drop them yourself).

What you'll see
  (counts and times differ from run to run)
  ========================================================================
  1. One query, four destinations per micro-batch
  ========================================================================
  Started the ecommerce simulator for this run: python data_generators/generate_ecommerce_events.py ...
  batch 0: 60 events -> Delta v0 | 8 purchases -> database (Electronics, Fashion, Home, Sports) | 3 alerts | 0 quarantined
  batch 1: 140 events -> Delta v1 | 14 purchases -> database (Electronics, Fashion, Home, Sports) | 2 alerts | 0 quarantined
  ========================================================================
  2. What landed where
  ========================================================================
  Delta table output/10_foreach_batch/events: 200 rows in 2 versions
  category_sales (jdbc:sqlite:output/10_foreach_batch/shop.db):
  +-----------+---------+-----+--------+----------+
  |category   |purchases|units|revenue |last_batch|
  +-----------+---------+-----+--------+----------+
  |Electronics|7        |16   |10099.84|1         |
  |Fashion    |4        |9    |534.91  |1         |
  ...
  applied_batches: 2 batch ids recorded
  Alerts: 5 lines in output/10_foreach_batch/alerts
    {"event_id":"EVT-000009","user_id":"USER-2011","product_id":"P003","product_name":"Smart Watch",...}
  ========================================================================
  3. A crash before the commit: Spark replays the batch, nothing doubles
  ========================================================================
  Deleted checkpoints/10_foreach_batch/events/commits/1: to Spark, batch 1 never finished.
  batch 1 (again): 140 events -> Delta skipped (txnVersion 1 already committed) | database skipped (batch 1 already applied) | 2 alerts | 0 quarantined
  Delta rows: 200 -> 200; database purchases: 22 -> 22; alert lines: 5 -> 5
"""

from __future__ import annotations

import functools
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from common import cli, config, paths, simulators
from common.errors import CourseError
from common.files import json_lines, write_atomically
from common.runner import (
    banner,
    checkpoint_root,
    foreach_batch,
    lesson_session,
    run_lesson,
    say,
    stop_between_batches,
)
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from common.timestamps import iso

LESSON = "10_foreach_batch"
DEFAULT_DURATION = 15
TRIGGER_INTERVAL = "3 seconds"
ALERT_THRESHOLD = 500.0  # a purchase worth at least this much (price x quantity) raises an alert
QUERY_TIMEOUT_SECONDS = 120
FIRST_BATCH_GRACE_SECONDS = 60  # a cold JVM on a slow machine may need this long for its first batch
# The shop simulator the lesson starts when none is running: a file every 2 s.
SIMULATOR_ARGS = ["--count", "10", "--interval", "2"]
CORRUPT_COLUMN = "_corrupt_record"
RAW_SCHEMA = StructType(ECOMMERCE_EVENT_SCHEMA.fields + [StructField(CORRUPT_COLUMN, StringType())])
# JDBC URL prefix -> driver class; the SQLite driver comes with get_spark(jdbc=True).
JDBC_DRIVERS = {"jdbc:sqlite:": "org.sqlite.JDBC", "jdbc:postgresql:": "org.postgresql.Driver"}
POSTGRES_JDBC_PACKAGE = "org.postgresql:postgresql:42.7.7"

# The database side. Plain SQL that SQLite and PostgreSQL both accept.
CREATE_TABLES = (
    """CREATE TABLE IF NOT EXISTS category_sales (
        category VARCHAR(64) PRIMARY KEY,
        purchases BIGINT NOT NULL,
        units BIGINT NOT NULL,
        revenue DOUBLE PRECISION NOT NULL,
        last_batch BIGINT NOT NULL)""",
    # One row per (query, batch) whose aggregates were added: the replay guard.
    """CREATE TABLE IF NOT EXISTS applied_batches (
        app_id VARCHAR(64) NOT NULL,
        batch_id BIGINT NOT NULL,
        events BIGINT NOT NULL,
        PRIMARY KEY (app_id, batch_id))""",
)
CLAIM_BATCH = (
    "INSERT INTO applied_batches (app_id, batch_id, events) VALUES (?, ?, ?) "
    "ON CONFLICT (app_id, batch_id) DO NOTHING"
)
ADD_TO_CATEGORY = (
    "INSERT INTO category_sales (category, purchases, units, revenue, last_batch) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (category) DO UPDATE SET "
    "purchases = category_sales.purchases + excluded.purchases, "
    "units = category_sales.units + excluded.units, "
    "revenue = category_sales.revenue + excluded.revenue, "
    "last_batch = excluded.last_batch"
)


@dataclass(frozen=True)
class Jdbc:
    url: str
    user: str | None = None
    password: str | None = None

    def display(self) -> str:
        return self.url.replace(str(paths.PROJECT_ROOT) + "/", "")


@dataclass
class Destinations:
    """Where each micro-batch goes."""

    delta_table: Path
    jdbc: Jdbc
    alerts_dir: Path  # JSON lines, one file per batch (unless alerts go to Kafka)
    quarantine_dir: Path  # lines that were not valid JSON events
    alert_threshold: float = ALERT_THRESHOLD
    kafka_bootstrap: str | None = None  # set: alerts go to the Kafka topic alerts_topic instead
    alerts_topic: str = config.TOPIC_ALERTS
    app_id: str | None = None  # None: the streaming query's id (kept in its checkpoint)


@dataclass
class BatchReport:
    batch_id: int
    events: int
    delta_version: int | None  # the version this batch created; None: skipped (already there)
    database_applied: bool
    purchases: int
    categories: list[str]
    alerts: int
    quarantined: int
    replayed: bool = False

    def describe(self) -> str:
        delta = (f"Delta v{self.delta_version}" if self.delta_version is not None
                 else f"Delta skipped (txnVersion {self.batch_id} already committed)")
        database = (f"{self.purchases} purchases -> database ({', '.join(self.categories) or 'no category'})"
                    if self.database_applied else f"database skipped (batch {self.batch_id} already applied)")
        alerts = f"{self.alerts} alert{'s' if self.alerts != 1 else ''}"
        again = " (again)" if self.replayed else ""
        return f"batch {self.batch_id}{again}: {self.events} events -> {delta} | {database} | {alerts} | " \
               f"{self.quarantined} quarantined"


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True)
    parser.add_argument("--jdbc-url", default=None,
                        help="database to upsert into (default: a SQLite file in output/10_foreach_batch); "
                             "e.g. jdbc:postgresql://localhost:5432/shop")
    parser.add_argument("--jdbc-user", default=None, help="database user (PostgreSQL)")
    parser.add_argument("--jdbc-password", default=None, help="database password (PostgreSQL)")
    parser.add_argument("--alerts", choices=("file", "kafka"), default="file",
                        help=f"where alerts go: JSON files, or the Kafka topic '{config.TOPIC_ALERTS}' "
                             "(default: %(default)s)")
    parser.add_argument("--alert-threshold", type=float, default=ALERT_THRESHOLD, metavar="AMOUNT",
                        help="a purchase worth at least this much raises an alert (default: %(default)s)")
    args = parser.parse_args(argv)
    paths.ensure_dirs(paths.ECOMMERCE_DIR)
    jdbc = Jdbc(args.jdbc_url or f"jdbc:sqlite:{paths.output_for(LESSON, 'shop.db')}",
                args.jdbc_user, args.jdbc_password)
    driver_for(jdbc.url)  # an unsupported URL fails here, before Spark starts
    checkpoint = checkpoint_root(LESSON, args) / "events"
    extra_packages = [POSTGRES_JDBC_PACKAGE] if jdbc.url.startswith("jdbc:postgresql:") else []
    kafka_alerts = args.alerts == "kafka"

    with kafka_broker_if(kafka_alerts) as bootstrap, lesson_session(
        LESSON, args, delta=True, jdbc=True, kafka=kafka_alerts, extra_packages=extra_packages
    ) as spark:
        paths.output_for(LESSON).mkdir(parents=True, exist_ok=True)
        destinations = Destinations(
            delta_table=paths.output_for(LESSON, "events"),
            jdbc=jdbc,
            alerts_dir=paths.output_for(LESSON, "alerts"),
            quarantine_dir=paths.output_for(LESSON, "quarantine"),
            alert_threshold=args.alert_threshold,
            kafka_bootstrap=bootstrap,
        )
        prepare_database(spark, jdbc)
        if bootstrap:
            from common.kafka import ensure_topics

            ensure_topics(bootstrap, [config.TOPIC_ALERTS])
        writer = BatchWriter(destinations)

        banner("1. One query, four destinations per micro-batch")
        say(f"""Each micro-batch of shop events goes to a Delta table, to per-category totals
            in {jdbc.display()}, to {'the Kafka topic ' + config.TOPIC_ALERTS if bootstrap
            else paths.display(destinations.alerts_dir)} for purchases of at least
            {args.alert_threshold:g}, and malformed lines to a quarantine.""")
        with simulators.simulator_for_lesson(
            "ecommerce", "generate_ecommerce_events.py", SIMULATOR_ARGS, enabled=not args.no_simulator
        ):
            query = start_query(read_events(spark, paths.ECOMMERCE_DIR), writer, checkpoint,
                                available_now=args.available_now)
            run_for(query, args.duration)
        # The simulator has stopped: pick up the files it wrote after the query stopped.
        finish(start_query(read_events(spark, paths.ECOMMERCE_DIR), writer, checkpoint, available_now=True))

        banner("2. What landed where")
        before = show_destinations(spark, destinations)

        banner("3. A crash before the commit: Spark replays the batch, nothing doubles")
        replayed = forget_last_commit(checkpoint)
        if replayed is None:
            say("No micro-batch has run yet, so there is nothing to replay: run the lesson again.")
            return
        print(f"Deleted {paths.display(checkpoint / 'commits' / str(replayed))}: to Spark, batch {replayed} "
              "never finished.")
        writer.replaying = replayed
        finish(start_query(read_events(spark, paths.ECOMMERCE_DIR), writer, checkpoint, available_now=True))
        after = summarize(spark, destinations)
        alerts = (f"alert lines: {before['alerts']} -> {after['alerts']}" if not bootstrap
                  else f"alerts: sent to '{config.TOPIC_ALERTS}' again")
        print(f"Delta rows: {before['delta_rows']} -> {after['delta_rows']}; database purchases: "
              f"{before['purchases']} -> {after['purchases']}; {alerts}")
        say("""Spark ran the batch again with the same id and the same input, exactly what it
            does after a crash between the sink's write and the checkpoint's commit. Delta
            saw (txnAppId, txnVersion) in its log and skipped the append; the database saw
            the batch id in applied_batches and rolled back. Without those guards every
            replay would add the batch a second time: foreachBatch alone is only
            at-least-once.""")
        if bootstrap:
            say("""Kafka is the exception here: the replay sent the batch's alerts again. They
                carry the event id as their key, so a consumer (or a compacted topic) can drop
                the repeats; exactly-once into Kafka would need Kafka transactions.""")
        else:
            say("The alert file of the batch (named after its id) was rewritten with the same lines.")


def read_events(spark: SparkSession, folder: Path) -> DataFrame:
    """The shop's event files as a stream; a line that is not valid JSON keeps its text in _corrupt_record."""
    return spark.readStream.schema(RAW_SCHEMA).option("columnNameOfCorruptRecord", CORRUPT_COLUMN).json(str(folder))


def build_valid_events(raw: DataFrame) -> DataFrame:
    """Events that parsed and have an id: the schema's columns only."""
    valid = F.col(CORRUPT_COLUMN).isNull() & F.col("event_id").isNotNull()
    return raw.filter(valid).select(*ECOMMERCE_EVENT_SCHEMA.fieldNames())


def build_quarantine(raw: DataFrame) -> DataFrame:
    """Lines that did not parse (or parsed without an event id), as raw text."""
    invalid = F.col(CORRUPT_COLUMN).isNotNull() | F.col("event_id").isNull()
    return raw.filter(invalid).select(
        F.coalesce(F.col(CORRUPT_COLUMN), F.to_json(F.struct(*ECOMMERCE_EVENT_SCHEMA.fieldNames()))).alias("line")
    )


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
        "event_id", "user_id", "product_id", "product_name", "quantity", amount.alias("amount"), "timestamp",
        F.lit(f"purchase >= {threshold:g}").alias("rule"),
    )


class BatchWriter:
    """The foreachBatch function: call it with (batch DataFrame, batch id)."""

    def __init__(self, destinations: Destinations) -> None:
        self.destinations = destinations
        self.reports: list[BatchReport] = []
        self.replaying: int | None = None  # the batch id the lesson expects Spark to run again

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        report = self.write_batch(batch, batch_id)
        report.replayed = batch_id == self.replaying
        self.reports.append(report)
        print(report.describe(), flush=True)

    def write_batch(self, batch: DataFrame, batch_id: int) -> BatchReport:
        spark, where = batch.sparkSession, self.destinations
        app_id = where.app_id or query_id(spark)
        # Four writes read this batch: without persist() each would read the files again.
        batch.persist()
        try:
            events = build_valid_events(batch)
            event_count = events.count()
            version = append_to_delta_once(spark, events, where.delta_table, app_id, batch_id)
            sales = build_category_sales(events).orderBy("category").collect()
            applied = add_to_database(spark, where.jdbc, app_id, batch_id, event_count, sales)
            alerts = build_alerts(events, where.alert_threshold)
            if where.kafka_bootstrap:
                alert_count = send_alerts_to_kafka(alerts, where.kafka_bootstrap, where.alerts_topic)
            else:
                alert_count = write_lines(where.alerts_dir, batch_id, alerts.orderBy("event_id").collect())
            quarantined = write_lines(where.quarantine_dir, batch_id, build_quarantine(batch).collect())
        finally:
            batch.unpersist()
        return BatchReport(batch_id, event_count, version, applied, sum(row["purchases"] for row in sales),
                           [row["category"] for row in sales], alert_count, quarantined)


def append_to_delta_once(spark: SparkSession, events: DataFrame, table: Path, app_id: str, batch_id: int) -> int | None:
    """Append the batch unless this (app id, batch id) is already in the table; the new version or None."""
    before = delta_version(spark, table)
    # Delta keeps, per txnAppId, the highest txnVersion committed, in the same commit as
    # the data: a write whose txnVersion is not higher is skipped, atomically.
    (
        events.write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", batch_id)
        .save(str(table))
    )
    after = delta_version(spark, table)
    return after if after != before else None


def add_to_database(spark: SparkSession, jdbc: Jdbc, app_id: str, batch_id: int, events: int, sales: list) -> bool:
    """Add the batch's per-category totals to the database once; False when the batch was already there.

    Why a JDBC connection on the driver and not ``DataFrame.write.jdbc``: Spark's JDBC
    writer only inserts (or overwrites the table), so it can neither add to existing
    totals nor check for a replay, and each of its tasks commits on its own. The
    aggregates of a batch are a handful of rows, so collecting them to the driver is
    cheap, and one connection gives one transaction: the batch id and its totals are
    committed together or not at all. (For large outputs: write them to a staging
    table with write.jdbc, then run one INSERT ... SELECT ... ON CONFLICT in a transaction.)
    """
    with jdbc_connection(spark, jdbc) as connection:
        connection.setAutoCommit(False)
        try:
            claim = connection.prepareStatement(CLAIM_BATCH)
            claim.setString(1, app_id)
            claim.setLong(2, batch_id)
            claim.setLong(3, events)
            if claim.executeUpdate() == 0:  # the batch id is already there: a replay
                connection.rollback()
                return False
            add = connection.prepareStatement(ADD_TO_CATEGORY)
            for row in sales:
                add.setString(1, row["category"])
                add.setLong(2, row["purchases"])
                add.setLong(3, row["units"])
                add.setDouble(4, float(row["revenue"]))
                add.setLong(5, batch_id)
                add.executeUpdate()
            connection.commit()
            return True
        except Exception:
            connection.rollback()
            raise


def send_alerts_to_kafka(alerts: DataFrame, bootstrap: str, topic: str = config.TOPIC_ALERTS) -> int:
    """Alerts as JSON messages keyed by event id (a replay sends them again: consumers dedupe by key)."""
    count = alerts.count()
    if count:
        (
            alerts.select(F.col("event_id").alias("key"), F.to_json(F.struct("*")).alias("value"))
            .write.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", topic)
            .save()
        )
    return count


def write_lines(folder: Path, batch_id: int, rows: list) -> int:
    """Rows as JSON lines in batch-<id>.json: a replay rewrites the same file (idempotent)."""
    if rows:
        records = [{key: iso(value) if hasattr(value, "isoformat") else value
                    for key, value in row.asDict().items()} for row in rows]
        write_atomically(folder, f"batch-{batch_id:06d}.json", json_lines(records))
    return len(rows)


def prepare_database(spark: SparkSession, jdbc: Jdbc) -> None:
    """Create the tables if they do not exist."""
    with jdbc_connection(spark, jdbc) as connection:
        statement = connection.createStatement()
        for sql in CREATE_TABLES:
            statement.executeUpdate(sql)


def query_database(spark: SparkSession, jdbc: Jdbc, sql: str) -> list[tuple]:
    """Run a SELECT and return its rows as tuples."""
    with jdbc_connection(spark, jdbc) as connection:
        result = connection.createStatement().executeQuery(sql)
        columns = result.getMetaData().getColumnCount()
        rows = []
        while result.next():
            rows.append(tuple(to_python(result.getObject(index)) for index in range(1, columns + 1)))
        return rows


def to_python(value):
    """JDBC values as Python values: py4j converts numbers and text; a NUMERIC (BigDecimal) becomes a float."""
    return float(value.doubleValue()) if hasattr(value, "doubleValue") else value


def driver_for(url: str) -> str:
    for prefix, driver in JDBC_DRIVERS.items():
        if url.startswith(prefix):
            return driver
    raise CourseError(f"This lesson knows the SQLite and PostgreSQL JDBC drivers; '{url}' is neither. "
                      "Use jdbc:sqlite:<file> or jdbc:postgresql://host:port/database.")


@contextmanager
def jdbc_connection(spark: SparkSession, jdbc: Jdbc) -> Iterator:
    """A java.sql.Connection in the driver's JVM, closed on the way out."""
    driver_class = driver_for(jdbc.url)
    # java.sql.DriverManager cannot see drivers loaded from spark.jars.packages (another
    # class loader), so the lesson creates the driver through py4j and asks it directly.
    try:
        driver = functools.reduce(getattr, driver_class.split("."), spark._jvm)()
    except TypeError as error:  # py4j: "'JavaPackage' object is not callable" = class not found
        raise CourseError(f"The JDBC driver {driver_class} is not on Spark's classpath. The lesson adds it "
                          "through get_spark(jdbc=True) (SQLite) or extra_packages (PostgreSQL).") from error
    properties = spark._jvm.java.util.Properties()
    if jdbc.user:
        properties.setProperty("user", jdbc.user)
    if jdbc.password:
        properties.setProperty("password", jdbc.password)
    connection = driver.connect(jdbc.url, properties)
    try:
        yield connection
    finally:
        connection.close()


def query_id(spark: SparkSession) -> str:
    """The id of the streaming query running this batch: stable across restarts on one checkpoint."""
    # A NEW checkpoint gets a new id, and its batch ids start again at 0: with a fixed
    # txnAppId, Delta would then silently skip every batch up to the old highest id.
    value = spark.sparkContext.getLocalProperty("sql.streaming.queryId")
    if not value:
        raise CourseError("BatchWriter runs outside a streaming query: pass Destinations(app_id=...).")
    return value


def delta_version(spark: SparkSession, table: Path) -> int:
    """The table's latest version; -1 when there is no table yet."""
    if not DeltaTable.isDeltaTable(spark, str(table)):
        return -1
    return DeltaTable.forPath(spark, str(table)).history(1).collect()[0]["version"]


def start_query(events: DataFrame, writer: BatchWriter, checkpoint: Path, *, available_now: bool):
    query = (
        events.writeStream.foreachBatch(foreach_batch(writer))
        .option("checkpointLocation", str(checkpoint))
        .queryName("shop_events_foreach_batch")
    )
    trigger = {"availableNow": True} if available_now else {"processingTime": TRIGGER_INTERVAL}
    return query.trigger(**trigger).start()


def forget_last_commit(checkpoint: Path) -> int | None:
    """Simulate a crash after the sink wrote but before Spark recorded the batch as done."""
    commits = checkpoint / "commits"
    ids = sorted(int(path.name) for path in commits.glob("[0-9]*")) if commits.exists() else []
    if not ids:
        return None
    last = ids[-1]
    for name in (str(last), f".{last}.crc"):
        (commits / name).unlink(missing_ok=True)
    return last


def summarize(spark: SparkSession, where: Destinations) -> dict:
    delta_rows = spark.read.format("delta").load(str(where.delta_table)).count() \
        if DeltaTable.isDeltaTable(spark, str(where.delta_table)) else 0
    purchases = query_database(spark, where.jdbc,
                               "SELECT CAST(COALESCE(SUM(purchases), 0) AS BIGINT) FROM category_sales")[0][0]
    alert_lines = sum(len(path.read_text().splitlines()) for path in where.alerts_dir.glob("*.json")) \
        if where.alerts_dir.exists() else 0
    return {"delta_rows": delta_rows, "purchases": int(purchases), "alerts": alert_lines}


def show_destinations(spark: SparkSession, where: Destinations) -> dict:
    summary = summarize(spark, where)
    versions = delta_version(spark, where.delta_table) + 1
    print(f"Delta table {paths.display(where.delta_table)}: {summary['delta_rows']} rows in {versions} "
          f"version{'s' if versions != 1 else ''}")
    print(f"category_sales ({where.jdbc.display()}):")
    rows = query_database(spark, where.jdbc, "SELECT category, purchases, units, revenue, last_batch "
                                             "FROM category_sales ORDER BY category")
    if rows:
        # Rounded here, not in SQL: PostgreSQL has no ROUND(double precision, digits).
        spark.createDataFrame([(*row[:3], round(row[3], 2), row[4]) for row in rows],
                              "category string, purchases long, units long, revenue double, last_batch long"
                              ).show(truncate=False)
    applied = query_database(spark, where.jdbc, "SELECT COUNT(*) FROM applied_batches")[0][0]
    print(f"applied_batches: {applied} batch ids recorded")
    if where.kafka_bootstrap:
        print(f"Alerts went to the Kafka topic '{config.TOPIC_ALERTS}'.")
    else:
        print(f"Alerts: {summary['alerts']} lines in {paths.display(where.alerts_dir)}")
        for path in sorted(where.alerts_dir.glob("*.json"))[:1]:
            print("  " + path.read_text().splitlines()[0])
    return summary


def run_for(query, duration: float) -> None:
    """Let the query run ``duration`` seconds, longer while its first batch is still running then."""
    started = time.monotonic()
    try:
        while query.isActive:
            elapsed = time.monotonic() - started
            first_batch_running = query.status["isTriggerActive"] and not any(
                progress["numInputRows"] > 0 for progress in query.recentProgress)
            if elapsed >= duration and (not first_batch_running or elapsed >= duration + FIRST_BATCH_GRACE_SECONDS):
                break
            query.awaitTermination(1)
    finally:
        stop_between_batches(query)
    if query.exception() is not None:
        raise query.exception()


def finish(query) -> None:
    """Wait for an availableNow query to process its input; raise its failure, if any."""
    if not query.awaitTermination(QUERY_TIMEOUT_SECONDS):
        query.stop()
        raise TimeoutError(f"query {query.name} did not finish within {QUERY_TIMEOUT_SECONDS} s")
    if query.exception() is not None:
        raise query.exception()


def kafka_broker_if(wanted: bool):
    """The Kafka broker's bootstrap servers when alerts go to Kafka, else None."""
    if not wanted:
        return nullcontext(None)
    from common.kafka_broker import kafka_for_lesson

    return kafka_for_lesson()


if __name__ == "__main__":
    run_lesson(main)

"""11 · Delta Lake: a transactional table as a streaming sink and as a streaming source.

What you'll learn
  - Delta as a sink in append mode, exactly once: the table's log records each micro-batch
    of the query, so a restart on the same checkpoint adds no duplicate.
  - Delta also takes COMPLETE mode (each batch replaces the table's contents in one
    commit); parquet/json/csv file sinks are append-only and refuse it.
  - Reading the table in batch while the stream writes it: every read sees a committed version.
  - ``DeltaTable.history()``, time travel (``versionAsOf``), and
    ``readStream.format("delta")`` feeding a second query.
  - Upserts with ``MERGE`` from ``foreachBatch``
    (``whenMatchedUpdateAll().whenNotMatchedInsertAll()``).

Run
  python streaming_tutorial/11_delta_lake.py                  # about 15 s of streaming, then the rest
  python streaming_tutorial/11_delta_lake.py --available-now  # only the files there now
  python streaming_tutorial/11_delta_lake.py --reset          # start from empty tables
  It needs the shop simulator and starts it when it is not running; to run it yourself,
  in a second terminal:
    python data_generators/generate_ecommerce_events.py --count 30 --interval 2
    python streaming_tutorial/11_delta_lake.py --no-simulator
  The tables are under output/11_delta_lake/ (events, sales_by_category, user_last_event).

What you'll see
  (counts and times differ from run to run)
  ========================================================================
  1. Events stream into a Delta table (append); batch reads while it writes
  ========================================================================
    after  34 s: batch 0 committed 200 rows; a batch read sees version 1 with 200 rows
  ...
  2. A restart on the same checkpoint adds nothing twice
    before the restart: 600 rows (600 distinct event ids)
    restart 1 on the same checkpoint: 0 new rows -> 600 rows (600 distinct event ids)
    restart 2 on the same checkpoint: 0 new rows -> 600 rows (600 distinct event ids)
  3. COMPLETE mode: a parquet sink refuses it, a Delta sink takes it
  parquet sink: [STREAMING_OUTPUT_MODE.UNSUPPORTED_DATASOURCE] Invalid streaming output mode:
  complete. This output mode is not supported in Data Source parquet.
  +-----------+---------+-----+-------+
  |category   |purchases|units|revenue|
  +-----------+---------+-----+-------+
  |Electronics|15       |30   |14999.7|
  |Fashion    |17       |35   |1784.65|
  ...
  4. History and time travel
  +-------+----------------+----------+-------+-------------+
  |version|operation       |outputMode|epochId|numOutputRows|
  +-------+----------------+----------+-------+-------------+
  |0      |CREATE TABLE    |NULL      |NULL   |NULL         |
  |1      |STREAMING UPDATE|Append    |0      |200          |
  |2      |STREAMING UPDATE|Append    |1      |260          |
  ...
    version 0: 0 rows; version 1: 200 rows; latest (version 4): 600 rows
  5. MERGE from foreachBatch: the latest event of every user
  +---------+-------------+---------------+---------------+-------------------+
  |user_id  |last_event_id|last_event_type|last_product_id|last_seen          |
  +---------+-------------+---------------+---------------+-------------------+
  |USER-2008|EVT-000600   |cart           |P002           |2026-11-22 14:24:23|
  |USER-2019|EVT-000599   |view           |P006           |2026-11-22 14:24:19|
  ...
  40 users in output/11_delta_lake/user_last_event
"""

from __future__ import annotations

import time
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from common import cli, paths, simulators
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

LESSON = "11_delta_lake"
DEFAULT_DURATION = 15  # seconds of live streaming in part 1; the other parts end by themselves
TRIGGER_INTERVAL = "3 seconds"  # one Delta commit (one table version) per micro-batch
POLL_SECONDS = 1  # how often part 1 checks whether the query committed a new batch
FIRST_BATCH_GRACE_SECONDS = 60  # part 1 waits this much longer for its first batch on a slow machine
QUERY_TIMEOUT_SECONDS = 120  # an availableNow query that takes longer has a problem
# The shop simulator the lesson starts when none is running: a file every 2 s.
SIMULATOR_ARGS = ["--count", "30", "--interval", "2"]
SHOW_ROWS = 8


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True).parse_args(argv)
    paths.ensure_dirs(paths.ECOMMERCE_DIR)
    checkpoints = checkpoint_root(LESSON, args)
    tables = {name: paths.output_for(LESSON, name) for name in ("events", "sales_by_category", "user_last_event")}
    with lesson_session(LESSON, args, delta=True) as spark:
        banner("1. Events stream into a Delta table (append); batch reads while it writes")
        with simulators.simulator_for_lesson(
            "ecommerce", "generate_ecommerce_events.py", SIMULATOR_ARGS, enabled=not args.no_simulator
        ):
            create_events_table(spark, tables["events"])
            query = start_events_to_delta(events_source(spark), tables["events"], checkpoints / "events",
                                          available_now=args.available_now)
            watch_table_while_streaming(spark, query, tables["events"], args.duration)
        say("""Each micro-batch is one commit in the table's _delta_log. A batch read sees
            the latest committed version, never a half-written batch: readers and the
            writer do not block each other.""")

        # The simulator has stopped: from here on, no new input arrives.
        banner("2. A restart on the same checkpoint adds nothing twice")
        show_exactly_once(spark, events_source(spark), tables["events"], checkpoints / "events")
        if count_rows(spark, tables["events"])[0] == 0:
            say(f"""The events table is still empty: no shop events arrived in
                {paths.display(paths.ECOMMERCE_DIR)}. Start the simulator (see Run above) or run
                the lesson without --no-simulator, then run it again.""")
            return

        banner("3. COMPLETE mode: a parquet sink refuses it, a Delta sink takes it")
        sales = build_sales_by_category(read_delta_stream(spark, tables["events"]))
        print("parquet sink: " + explain_parquet_complete_failure(sales, checkpoints / "parquet_attempt"))
        finish(start_sales_to_delta(sales, tables["sales_by_category"], checkpoints / "sales_by_category"))
        spark.read.format("delta").load(str(tables["sales_by_category"])).orderBy("category").show(truncate=False)
        say("""The Delta sink replaced the table's contents with the current totals in one
            commit per batch: readers always see one complete result. Its source was the
            events table itself, read as a stream with readStream.format("delta").""")

        banner("4. History and time travel")
        show_history(spark, tables["events"])
        show_time_travel(spark, tables["events"])

        banner("5. MERGE from foreachBatch: the latest event of every user")
        finish(start_user_merge(read_delta_stream(spark, tables["events"]), tables["user_last_event"],
                                checkpoints / "user_last_event"))
        users = spark.read.format("delta").load(str(tables["user_last_event"]))
        users.orderBy(F.col("last_seen").desc(), "user_id").show(SHOW_ROWS, truncate=False)
        print(f"{users.count()} users in {paths.display(tables['user_last_event'])}")
        say("""A second query read the events table as a stream and, per micro-batch,
            MERGEd one row per user into user_last_event: matched users are updated,
            new ones inserted. The MERGE only moves a row forward in time, so replaying
            a batch changes nothing. Run the lesson again: every query continues from
            its checkpoint.""")


def read_events(spark: SparkSession, folder: Path) -> DataFrame:
    """The shop's JSON event files as a stream (a malformed line becomes a row of nulls)."""
    return spark.readStream.schema(ECOMMERCE_EVENT_SCHEMA).json(str(folder))


def events_source(spark: SparkSession) -> DataFrame:
    return read_events(spark, paths.ECOMMERCE_DIR)


def read_delta_stream(spark: SparkSession, table: Path, *, max_files_per_trigger: int | None = None) -> DataFrame:
    """A Delta table as a streaming source: every new commit is new input."""
    reader = spark.readStream.format("delta")
    if max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", max_files_per_trigger)
    return reader.load(str(table))


def create_events_table(spark: SparkSession, table: Path) -> None:
    """Create the events table (empty) if it does not exist, so readers can start at once."""
    DeltaTable.createIfNotExists(spark).location(str(table)).addColumns(ECOMMERCE_EVENT_SCHEMA).execute()


def start_events_to_delta(events: DataFrame, table: Path, checkpoint: Path, *, available_now: bool = True):
    """Append every event to the Delta table, exactly once per checkpoint."""
    # The Delta sink writes each batch's files and then commits them together with
    # (query id, batch id) in the table's log. A batch that runs again after a crash
    # finds its id there and is skipped: exactly once, with the checkpoint's help.
    writer = (
        events.writeStream.format("delta")
        .outputMode("append")
        .option("checkpointLocation", str(checkpoint))
        .queryName("events_to_delta")
    )
    trigger = {"availableNow": True} if available_now else {"processingTime": TRIGGER_INTERVAL}
    return writer.trigger(**trigger).start(str(table))


def build_sales_by_category(events: DataFrame) -> DataFrame:
    """Purchases, units and revenue per category: an aggregation that needs complete mode here."""
    purchases = events.filter(F.col("event_type") == "purchase")
    return purchases.groupBy("category").agg(
        F.count("*").alias("purchases"),
        F.sum("quantity").alias("units"),
        # Rounded so the totals read like money (doubles add up to 0.30000000000000004).
        F.round(F.sum(F.col("price") * F.col("quantity")), 2).alias("revenue"),
    )


def start_sales_to_delta(sales: DataFrame, table: Path, checkpoint: Path, *, available_now: bool = True):
    """Keep the Delta table equal to the current totals: complete mode, one overwrite per batch."""
    writer = (
        sales.writeStream.format("delta")
        # Complete mode re-emits the whole result every batch; the Delta sink overwrites the
        # table with it in one transaction. Update mode would need a MERGE (see part 5).
        .outputMode("complete")
        .option("checkpointLocation", str(checkpoint))
        .queryName("sales_by_category")
    )
    trigger = {"availableNow": True} if available_now else {"processingTime": TRIGGER_INTERVAL}
    return writer.trigger(**trigger).start(str(table))


def explain_parquet_complete_failure(sales: DataFrame, checkpoint: Path) -> str:
    """Try the seed's complete-mode parquet sink; return Spark's refusal (it fails at start())."""
    try:
        query = (
            sales.writeStream.format("parquet")
            .outputMode("complete")
            .option("checkpointLocation", str(checkpoint))
            .start(str(checkpoint / "never_written"))
        )
    except AnalysisException as error:
        # A file sink only ever adds files; it has no way to replace yesterday's totals.
        return str(error).split(" SQLSTATE")[0].strip()
    query.stop()
    raise AssertionError("a complete-mode parquet sink unexpectedly started")


def build_latest_per_user(events: DataFrame) -> DataFrame:
    """One row per user: their latest event in this (batch) DataFrame."""
    # MERGE needs at most one source row per target row, so a batch with three events of
    # the same user is reduced to the latest one first (ties broken by event id).
    latest_first = Window.partitionBy("user_id").orderBy(F.col("timestamp").desc(), F.col("event_id").desc())
    return (
        events.filter(F.col("user_id").isNotNull() & F.col("timestamp").isNotNull())
        .withColumn("rank", F.row_number().over(latest_first))
        .filter("rank = 1")
        .select(
            "user_id",
            F.col("event_id").alias("last_event_id"),
            F.col("event_type").alias("last_event_type"),
            F.col("product_id").alias("last_product_id"),
            F.col("timestamp").alias("last_seen"),
        )
    )


def merge_latest_per_user(spark: SparkSession, table: Path, batch: DataFrame) -> None:
    """Upsert one row per user into the Delta table with MERGE (creating the table if needed)."""
    latest = build_latest_per_user(batch)
    if not DeltaTable.isDeltaTable(spark, str(table)):
        latest.limit(0).write.format("delta").save(str(table))
    target = DeltaTable.forPath(spark, str(table))
    (
        target.alias("t")
        .merge(latest.alias("s"), "t.user_id = s.user_id")
        # Only move forward in time: replaying an older (or the same) batch changes nothing.
        .whenMatchedUpdateAll(
            condition="s.last_seen > t.last_seen OR (s.last_seen = t.last_seen AND s.last_event_id > t.last_event_id)"
        )
        .whenNotMatchedInsertAll()
        .execute()
    )


def start_user_merge(events: DataFrame, table: Path, checkpoint: Path, *, available_now: bool = True):
    """A second query: each micro-batch of events is MERGEd into the per-user table."""
    writer = (
        events.writeStream.foreachBatch(
            foreach_batch(lambda batch, batch_id: merge_latest_per_user(batch.sparkSession, table, batch))
        )
        .option("checkpointLocation", str(checkpoint))
        .queryName("user_last_event_merge")
    )
    trigger = {"availableNow": True} if available_now else {"processingTime": TRIGGER_INTERVAL}
    return writer.trigger(**trigger).start()


def watch_table_while_streaming(spark: SparkSession, query, table: Path, duration: float) -> None:
    """After each micro-batch the query commits, read the table in batch while the query goes on.

    Runs ``duration`` seconds, longer (up to FIRST_BATCH_GRACE_SECONDS more) while the first
    micro-batch is still running then: a cold JVM can take a while for it.
    """
    started, last_batch = time.monotonic(), -1
    try:
        while query.isActive:
            elapsed = time.monotonic() - started
            first_batch_running = last_batch < 0 and query.status["isTriggerActive"]
            if elapsed >= duration and (not first_batch_running or elapsed >= duration + FIRST_BATCH_GRACE_SECONDS):
                break
            query.awaitTermination(POLL_SECONDS)
            progress = query.lastProgress
            if progress and progress["batchId"] > last_batch and progress["numInputRows"] > 0:
                last_batch = progress["batchId"]
                rows = spark.read.format("delta").load(str(table)).count()
                print(f"  after {time.monotonic() - started:3.0f} s: batch {last_batch} committed "
                      f"{progress['numInputRows']} rows; a batch read sees version {table_version(spark, table)} "
                      f"with {rows} rows")
    finally:
        stop_between_batches(query)
    if query.exception() is not None:
        raise query.exception()


def show_exactly_once(spark: SparkSession, events: DataFrame, table: Path, checkpoint: Path) -> None:
    """Restart the append query twice on its checkpoint and count rows before and after."""
    before = count_rows(spark, table)
    print(f"  before the restart: {before[0]} rows ({before[1]} distinct event ids)")
    for restart in (1, 2):
        finish(start_events_to_delta(events, table, checkpoint, available_now=True))
        after = count_rows(spark, table)
        print(f"  restart {restart} on the same checkpoint: {after[0] - before[0]} new rows -> "
              f"{after[0]} rows ({after[1]} distinct event ids)")
        before = after
    say("""The checkpoint knows which files were committed, and the table's log knows
        which batches of this query it holds: a restart reads only files that arrived
        since (here none, or the few the simulator wrote at the end), and rows equal
        distinct ids. With a NEW checkpoint the query would read every file again and
        append duplicates: the checkpoint and the table belong together (--reset
        deletes both).""")


def show_history(spark: SparkSession, table: Path) -> None:
    history = DeltaTable.forPath(spark, str(table)).history()
    history.select(
        "version",
        "operation",
        F.col("operationParameters.outputMode").alias("outputMode"),
        F.col("operationParameters.epochId").alias("epochId"),
        F.col("operationMetrics.numOutputRows").alias("numOutputRows"),
    ).orderBy("version").show(20, truncate=False)
    say("""One version per commit: CREATE TABLE, then one STREAMING UPDATE per
        micro-batch (epochId is the batch id). Batches that found no new file wrote
        no version.""")


def show_time_travel(spark: SparkSession, table: Path) -> None:
    latest = table_version(spark, table)
    counts = [
        f"version {version}: {spark.read.format('delta').option('versionAsOf', version).load(str(table)).count()} rows"
        for version in sorted({0, min(1, latest)})
    ]
    print(f"  {'; '.join(counts)}; latest (version {latest}): {count_rows(spark, table)[0]} rows")
    say("""option("versionAsOf", N) reads the table as it was after commit N (or
        "timestampAsOf" by time): audits, reproducible reports, and undoing a bad
        write with RESTORE.""")


def table_version(spark: SparkSession, table: Path) -> int:
    return DeltaTable.forPath(spark, str(table)).history(1).collect()[0]["version"]


def count_rows(spark: SparkSession, table: Path) -> tuple[int, int]:
    """(rows, distinct event ids) of the events table."""
    row = spark.read.format("delta").load(str(table)).agg(
        F.count("*").alias("rows"), F.countDistinct("event_id").alias("ids")
    ).collect()[0]
    return row["rows"], row["ids"]


def finish(query) -> None:
    """Wait for an availableNow query to process its input; raise its failure, if any."""
    if not query.awaitTermination(QUERY_TIMEOUT_SECONDS):
        stop_between_batches(query)
        raise TimeoutError(f"query {query.name} did not finish within {QUERY_TIMEOUT_SECONDS} s")
    if query.exception() is not None:
        raise query.exception()


if __name__ == "__main__":
    run_lesson(main)

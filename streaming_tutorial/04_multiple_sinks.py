"""04 · One stream, three sinks: console, an in-memory SQL table and Parquet files, all at once.

What you'll learn
  - Each ``writeStream ... start()`` is its own query: one stream of shop events feeds a
    console sink (to watch), a memory sink (to query with ``spark.sql`` while it runs) and a
    Parquet file sink (to keep), each with its own checkpoint.
  - The memory sink is a table in the driver: handy for a quick look, not for real data.
  - The file sink writes only new rows (append), partitioned by date; complete mode there
    is an error, because files once written are never rewritten.
  - Read the sink's folder back with a batch query: only committed files are seen.

Run
  python streaming_tutorial/04_multiple_sinks.py                  # the files in data/ecommerce_events
  python streaming_tutorial/04_multiple_sinks.py --reset          # forget the checkpoints, read them again
  Files already there and no simulator running: it reads them and stops. No files: it
  starts the simulator for the run. To watch files arrive, start the simulator first in a
  second terminal; the lesson reads what it writes and stops when it stops (or after
  --duration seconds):
    python data_generators/generate_ecommerce_events.py --count 10 --interval 3
    python streaming_tutorial/04_multiple_sinks.py

What you'll see
  (first run on the sample data of initial_setup.py; the "after N s" tables vary)
  Complete mode on a file sink fails at start():
    [STREAMING_OUTPUT_MODE.UNSUPPORTED_DATASOURCE] Invalid streaming output mode: complete. This output mode is no...
  ...
  Running: shop_events_console, shop_events, shop_events_parquet (each with its own checkpoint)
  -------------------------------------------
  Batch: 0
  -------------------------------------------
  +----------+----------+----------------+-------+--------+-------------------+
  |event_id  |event_type|product_name    |price  |quantity|timestamp          |
  +----------+----------+----------------+-------+--------+-------------------+
  |EVT-000001|view      |Coffee Maker    |79.99  |1       |2025-01-15 10:30:00|
  |EVT-000002|view      |Wireless Earbuds|149.99 |1       |2025-01-15 10:30:01|
  ...
  spark.sql on the memory table after 15 s:
      SELECT event_type, COUNT(*) AS events, ROUND(SUM(price * quantity), 2) AS value
      FROM shop_events GROUP BY event_type ORDER BY event_type
    event_type   events       value
    cart             16    10198.64
    purchase         11     8953.77
    view             53     8223.55
  ...
  spark.sql on the memory table at the end:
  ...
    cart             18    13098.60
    purchase         12     9253.75
    view             70    12800.42
  ...
  +----------+------+
  |date      |events|
  +----------+------+
  |2025-01-15|100   |
  +----------+------+
  Partition folders in output/04_multiple_sinks/events: date=2025-01-15/ (5 files)
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from pyspark.errors import AnalysisException, StreamingQueryException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import cli, paths, simulators
from common.runner import banner, checkpoint_root, lesson_session, run_lesson, say, stop_between_batches
from common.schemas import ECOMMERCE_EVENT_SCHEMA

LESSON = "04_multiple_sinks"
# An upper bound: with a simulator the lesson stops once it is done and its files are read.
DEFAULT_DURATION = 60
MAX_FILES_PER_TRIGGER = 1  # one file per micro-batch
TRIGGER_INTERVAL = "2 seconds"
MEMORY_TABLE = "shop_events"  # the memory sink's table name (its queryName)
SQL_EVERY_SECONDS = 3  # how often the lesson queries the memory table while the stream runs
POLL_SECONDS = 0.5
SIMULATOR_ARGS = ["--count", "4", "--interval", "3"]
FUNNEL_SQL = f"""
    SELECT event_type, COUNT(*) AS events, ROUND(SUM(price * quantity), 2) AS value
    FROM {MEMORY_TABLE} GROUP BY event_type ORDER BY event_type
"""


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True).parse_args(argv)
    folder = paths.ECOMMERCE_DIR
    paths.ensure_dirs(folder)
    parquet_dir = paths.output_for(LESSON, "events")
    with lesson_session(LESSON, args) as spark:
        events = build_events(read_events(spark, folder))

        banner("1. File sinks are append-only")
        explain_complete_to_files(events, paths.output_for(LESSON, "complete_demo"))

        # Watch the folder when files are (about to be) arriving; otherwise read what is
        # there and stop. (Starting the simulator only for an empty folder also keeps the
        # sample data that later lessons read as initial_setup.py wrote it.)
        watch = not args.available_now and (simulators.is_running("ecommerce") or not any(folder.glob("*.json")))
        trigger = {"processingTime": TRIGGER_INTERVAL} if watch else {"availableNow": True}
        banner("2. One stream, three queries: console, memory and Parquet")
        queries = start_sinks(
            events, checkpoints=checkpoint_root(LESSON, args), parquet_dir=parquet_dir, memory_table=MEMORY_TABLE,
            trigger=trigger,
        )
        print(f"Running: {', '.join(query.name for query in queries)} (each with its own checkpoint)")
        if watch:
            external = simulators.is_running("ecommerce")
            with simulators.simulator_for_lesson(
                "ecommerce", "generate_ecommerce_events.py", SIMULATOR_ARGS, enabled=not args.no_simulator
            ) as simulator:
                watch_memory_table(spark, queries, args.duration, input_done=simulator_done(simulator, external))
        else:
            watch_memory_table(spark, queries, args.duration, input_done=lambda: True)
        say("""The memory table lives in the driver and starts empty on every run: its
            checkpoint only remembers which files were read, so it holds this run's new
            events (none if every file was read before: --reset reads them again). The
            Parquet folder keeps every run's rows.""")

        banner("3. The Parquet sink's folder, read back as a batch DataFrame")
        show_parquet_output(spark, parquet_dir)


def read_events(spark, folder: Path) -> DataFrame:
    """The folder of shop-event files as a stream, one file per micro-batch."""
    # Lesson 03 shows how to quarantine malformed lines. Here a bad line would become a
    # row of nulls (in the Parquet folder date=__HIVE_DEFAULT_PARTITION__): visible, not lost.
    return (
        spark.readStream.schema(ECOMMERCE_EVENT_SCHEMA)
        .option("maxFilesPerTrigger", MAX_FILES_PER_TRIGGER)
        .json(str(folder))
    )


def build_events(raw: DataFrame) -> DataFrame:
    """The events plus the date they happened on (the Parquet partition column)."""
    return raw.withColumn("date", F.to_date("timestamp"))


def start_sinks(events: DataFrame, *, checkpoints: Path, parquet_dir: Path, memory_table: str, trigger: dict) -> list:
    """Start the three queries on the same stream; returns [console, memory, parquet].

    Three queries read the input three times, each at its own pace; a checkpoint
    belongs to exactly one query, so each gets its own folder.
    """
    console = (
        # The console only needs enough columns to see the stream move.
        events.select("event_id", "event_type", "product_name", "price", "quantity", "timestamp")
        .writeStream.format("console")
        .outputMode("append")
        .option("numRows", 5)
        .option("truncate", False)
        .option("checkpointLocation", str(checkpoints / "console"))
        .queryName(f"{memory_table}_console")
        .trigger(**trigger)
        .start()
    )
    memory = (
        # The memory sink collects every row into a table of this name on the driver.
        events.writeStream.format("memory")
        .outputMode("append")
        .option("checkpointLocation", str(checkpoints / "memory"))
        .queryName(memory_table)
        .trigger(**trigger)
        .start()
    )
    parquet = (
        # Append is the only mode a file sink supports; partitionBy makes one folder per date.
        events.writeStream.format("parquet")
        .outputMode("append")
        .partitionBy("date")
        .option("path", str(parquet_dir))
        .option("checkpointLocation", str(checkpoints / "parquet"))
        .queryName(f"{memory_table}_parquet")
        .trigger(**trigger)
        .start()
    )
    return [console, memory, parquet]


def explain_complete_to_files(events: DataFrame, demo_dir: Path) -> AnalysisException:
    """Start an aggregation to Parquet in complete mode; catch and explain Spark's refusal."""
    counts = events.groupBy("event_type").count()
    try:
        query = (
            counts.writeStream.format("parquet")
            .outputMode("complete")
            .option("path", str(demo_dir / "data"))
            .option("checkpointLocation", str(demo_dir / "checkpoint"))
            .start()
        )
    except AnalysisException as error:
        print(f"Complete mode on a file sink fails at start():\n  {str(error).strip().splitlines()[0][:110]}...")
        say("""Complete re-sends the whole result table every batch, which a sink can only
            honour by replacing what it wrote before. A file sink only ever adds new files,
            so it accepts append alone. Aggregate with a watermark and append (lesson 02),
            or write complete results to a sink that can overwrite, e.g. a Delta table or
            foreachBatch.""")
        return error
    query.stop()
    raise AssertionError("complete mode on a Parquet sink unexpectedly started")


def watch_memory_table(spark, queries: list, duration: float, *, input_done) -> None:
    """Query the memory table with SQL every few seconds while the queries run.

    Ends when ``input_done()`` says no more files will come and every query has read
    all there is (processAllAvailable), or after ``duration`` seconds.
    """
    started = time.monotonic()
    deadline = started + duration
    last_sql, shown, drainer = started, None, None
    try:
        while time.monotonic() < deadline and any(query.isActive for query in queries):
            for query in queries:
                query.awaitTermination(POLL_SECONDS / len(queries))  # raises if a query failed
            if time.monotonic() - last_sql >= SQL_EVERY_SECONDS:
                last_sql = time.monotonic()
                rows = spark.sql(FUNNEL_SQL).collect()
                if rows != shown:  # print only when the table has changed
                    print_memory_table(rows, f"after {last_sql - started:.0f} s")
                    shown = rows
            if drainer is None and input_done():
                drainer = start_draining(queries)
            if drainer is not None and not drainer.is_alive():
                break
    finally:
        for query in queries:
            stop_between_batches(query)
    for query in queries:
        if query.exception() is not None:
            raise query.exception()
    print_memory_table(spark.sql(FUNNEL_SQL).collect(), "at the end")


def start_draining(queries: list) -> threading.Thread:
    """In the background, let every active query process all the input there is now.

    processAllAvailable blocks until then, without a timeout of its own; in a thread,
    the caller keeps its own deadline (and keeps querying the memory table).
    """

    def process_all() -> None:
        try:
            for query in queries:
                if query.isActive:
                    query.processAllAvailable()
        except StreamingQueryException:
            return  # the failure is raised from query.exception() by the caller

    drainer = threading.Thread(target=process_all, daemon=True)
    drainer.start()
    return drainer


def simulator_done(simulator, external: bool):
    """A check that says when no more files will come from the simulator."""

    def done() -> bool:
        if simulator is not None:  # the one this lesson started
            return simulator.poll() is not None
        if external:  # the one in the second terminal
            return not simulators.is_running("ecommerce")
        return False  # --no-simulator: run for --duration

    return done


def print_memory_table(rows: list, when: str) -> None:
    """Print the SQL result in one go, so the console sink's tables cannot cut into it."""
    lines = [f"\nspark.sql on the memory table {when}:{FUNNEL_SQL.rstrip()}", "  event_type   events       value"]
    lines += [f"  {row.event_type:<10} {row.events:>8} {row.value:>11.2f}" for row in rows]
    if not rows:
        lines.append("  (no rows yet)")
    print("\n".join(lines))


def show_parquet_output(spark, parquet_dir: Path) -> None:
    if not parquet_dir.exists():
        print(f"{paths.display(parquet_dir)} does not exist yet: no batch reached the Parquet sink.")
        return
    # A batch read of the sink's folder uses its _spark_metadata log, so it sees only the
    # files of committed batches, never a half-written one.
    spark.read.parquet(str(parquet_dir)).groupBy("date").agg(F.count(F.lit(1)).alias("events")).orderBy(
        "date"
    ).show(truncate=False)
    folders = sorted(parquet_dir.glob("date=*"))
    listing = ", ".join(f"{folder.name}/ ({len(list(folder.glob('*.parquet')))} files)" for folder in folders)
    print(f"Partition folders in {paths.display(parquet_dir)}: {listing}")
    print("_spark_metadata/ is the sink's log of committed files.")


if __name__ == "__main__":
    run_lesson(main)

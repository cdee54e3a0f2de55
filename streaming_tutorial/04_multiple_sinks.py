"""04 · One stream, four sinks: console, an in-memory SQL table, Parquet files and a quarantine.

What you'll learn
  - Each ``writeStream ... start()`` is its own query: one stream of shop events feeds a
    console sink (to watch), a memory sink (to query with ``spark.sql`` while it runs), a
    Parquet file sink (to keep), and the lines that are not valid events go to a quarantine.
  - A checkpoint belongs to one query and makes its sink resume where it stopped: the
    Parquet and quarantine sinks have one; the console and memory sinks keep nothing across
    runs, so they have none and read the folder from its start on every run.
  - The file sink writes only new rows (append), partitioned by date; complete mode there
    is refused, because files once written are never rewritten.
  - Read the sink's folder back with a batch query: only committed files are seen.

Run
  python streaming_tutorial/04_multiple_sinks.py   # the files in data/ecommerce_events
  Files already there and no simulator running: it reads them and stops (run it again: the
  Parquet sink resumes and adds nothing). No files: it starts the simulator for the run.
  To watch files arrive, start the simulator first in a second terminal; the lesson reads
  what it writes and stops when it stops (or after --duration seconds):
    python data_generators/generate_ecommerce_events.py --count 10 --interval 3
    python streaming_tutorial/04_multiple_sinks.py

Practise
  python course.py exercises check 04.1   One stream, two sinks (build)

What you'll see
  (the sample data of initial_setup.py; with the simulator the SQL table also grows every
  few seconds)
  Complete mode on a file sink fails:
    [STREAMING_OUTPUT_MODE.UNSUPPORTED_DATASOURCE] Invalid streaming output mode: complete. ...
  -------------------------------------------
  Batch: 0
  -------------------------------------------
  +----------+----------+----------------+-------+--------+-------------------+
  |event_id  |event_type|product_name    |price  |quantity|timestamp          |
  +----------+----------+----------------+-------+--------+-------------------+
  |EVT-000001|view      |Coffee Maker    |79.99  |1       |2025-01-15 10:30:00|
  ...
  spark.sql on the memory table at the end:
    event_type  events  value
    cart        18      13098.6
    purchase    12      9253.75
    view        70      12800.42
  Lines each query read this run: shop_events_console 100, shop_events 100, ...
  Quarantined lines in output/04_multiple_sinks/quarantine: none
  ...
  +----------+------+-----+
  |date      |events|files|
  +----------+------+-----+
  |2025-01-15|100   |5    |
  +----------+------+-----+
  The second run, without --reset: the memory table shows the same 100 events, the Parquet
  folder too:
  Checkpoints in checkpoints/04_multiple_sinks: resuming parquet after batch 4, quarantine ...
  Lines each query read this run: ... shop_events_parquet 0, shop_events_quarantine 0
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import parsing, paths
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from infra import cli, simulators
from infra.runner import banner, checkpoint_root, lesson_session, run_lesson, run_queries, say
from teaching.demos import show_refusal
from teaching.narration import print_table

LESSON = "04_multiple_sinks"
# An upper bound: with a simulator the lesson stops once it is done and its files are read.
DEFAULT_DURATION = 60
MAX_FILES_PER_TRIGGER = 1  # one file per micro-batch, so the stream visibly moves
TRIGGER_INTERVAL = "2 seconds"
MEMORY_TABLE = "shop_events"  # the memory sink's table name (its queryName)
PARQUET_DIR = paths.output_for(LESSON, "events")
QUARANTINE_DIR = paths.output_for(LESSON, "quarantine")  # lines that are not valid shop events
SIMULATOR = ("ecommerce", "generate_ecommerce_events.py", ["--count", "4", "--interval", "3"])
FUNNEL_SQL = f"""
    SELECT event_type, COUNT(*) AS events, ROUND(SUM(price * quantity), 2) AS value
    FROM {MEMORY_TABLE} GROUP BY event_type ORDER BY event_type"""


def read_events(spark, folder: Path) -> DataFrame:
    """Each line of the shop-event files, parsed, with its quarantine_reason (null for a good
    event)."""
    # Text first, parsed next (lesson 03): a line that is not a valid event is kept, never lost.
    # No checkpointLocation on a reader: each writeStream below has its own (or none).
    folder.mkdir(parents=True, exist_ok=True)  # a stream may start before its first file
    lines = (
        spark.readStream.format("text")
        .option("maxFilesPerTrigger", MAX_FILES_PER_TRIGGER)
        .load(paths.uri(folder))
        # _metadata is the hidden per-file column of file sources: the quarantine names the file.
        .withColumn("source_file", F.col("_metadata.file_name"))
    )
    # Parse and quarantine reason, taught in lesson 03 (there written out for its schema);
    # common/parsing.py does the same for any schema.
    return parsing.parse_json(lines, ECOMMERCE_EVENT_SCHEMA)


def build_events(lines: DataFrame) -> DataFrame:
    """The good events plus the date they happened on (the Parquet partition column)."""
    good = parsing.valid_records(lines, ECOMMERCE_EVENT_SCHEMA)
    return good.withColumn("date", F.to_date("timestamp"))


def build_quarantine(lines: DataFrame) -> DataFrame:
    """The lines that are not valid events: their file, the reason and the raw text."""
    return parsing.quarantined(lines, "source_file")


def start_sinks(events: DataFrame, lines: DataFrame, checkpoints: Path, trigger: dict) -> list:
    """Four queries on the same stream, each reading the input at its own pace."""
    # A checkpoint belongs to exactly one query: each durable sink gets its own folder.
    return [
        start_console(events, trigger),
        start_memory(events, trigger),
        start_parquet(events, PARQUET_DIR, checkpoints / "parquet", trigger),
        start_quarantine(
            build_quarantine(lines), QUARANTINE_DIR, checkpoints / "quarantine", trigger
        ),
    ]


def start_console(events: DataFrame, trigger: dict):
    """Print a few columns of each micro-batch, to see the stream move."""
    shown = events.select(
        "event_id", "event_type", "product_name", "price", "quantity", "timestamp"
    )
    # No checkpointLocation: the console keeps nothing, so Spark gives it a temporary one per run.
    return (
        shown.writeStream.format("console")
        .outputMode("append")
        .option("numRows", 5)
        .option("truncate", False)
        .queryName(f"{MEMORY_TABLE}_console")
        .trigger(**trigger)
        .start()
    )


def start_memory(events: DataFrame, trigger: dict):
    """Collect every row into a table on the driver, named after the query."""
    # No checkpointLocation, on purpose: an append-mode memory sink cannot restart from one
    # (its rows died with the last run), and a second run would fail.
    return (
        events.writeStream.format("memory")
        .outputMode("append")
        .queryName(MEMORY_TABLE)
        .trigger(**trigger)
        .start()
    )


def start_parquet(events: DataFrame, folder: Path, checkpoint: Path, trigger: dict):
    """Append each micro-batch to Parquet files, one folder per date; resume from ``checkpoint``."""
    # Append is the only mode a file sink supports; partitionBy makes one folder per date.
    return (
        events.writeStream.format("parquet")
        .outputMode("append")
        .partitionBy("date")
        .option("path", paths.uri(folder))
        .option("checkpointLocation", paths.uri(checkpoint))
        .queryName(f"{MEMORY_TABLE}_parquet")
        .trigger(**trigger)
        .start()
    )


def start_quarantine(bad: DataFrame, folder: Path, checkpoint: Path, trigger: dict):
    """Append the lines that are not valid events to JSON files: kept with their reason."""
    # A file sink with its own checkpoint, so a restart adds only the bad lines it has not
    # written yet.
    return (
        bad.writeStream.format("json")
        .outputMode("append")
        .option("path", paths.uri(folder))
        .option("checkpointLocation", paths.uri(checkpoint))
        .queryName(f"{MEMORY_TABLE}_quarantine")
        .trigger(**trigger)
        .start()
    )


def start_complete_to_files(events: DataFrame, folder: Path):
    """An aggregation to Parquet in complete mode: Spark refuses it at start()."""
    return (
        events.groupBy("event_type")
        .count()
        .writeStream.format("parquet")
        .outputMode("complete")
        .option("path", paths.uri(folder / "data"))
        .option("checkpointLocation", paths.uri(folder / "checkpoint"))
        .start()
    )


def read_parquet_output(spark, folder: Path) -> DataFrame:
    """The Parquet sink's folder as a batch DataFrame: events and files per date."""
    # A batch read of a sink's folder follows its _spark_metadata log: only committed files.
    return (
        spark.read.parquet(paths.uri(folder))
        .groupBy("date")
        .agg(
            F.count(F.lit(1)).alias("events"),
            F.count_distinct("_metadata.file_path").alias("files"),
        )
        .orderBy("date")
    )


def read_funnel(spark) -> DataFrame:
    """Plain SQL on the memory table, while its query keeps adding rows to it."""
    return spark.sql(FUNNEL_SQL)


def print_funnel(spark, when: str) -> None:
    # Collect first, so nothing prints in between.
    rows = [tuple(row) for row in read_funnel(spark).collect()]
    print(f"\nspark.sql on the memory table {when}:", flush=True)
    print_table(("event_type", "events", "value"), rows or [("(no rows yet)", "", "")])


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True)
    args = parser.parse_args(argv)
    checkpoints = checkpoint_root(LESSON, args)
    with lesson_session(LESSON, args) as spark:
        lines = read_events(spark, paths.ECOMMERCE_DIR)
        events = build_events(lines)

        banner("1. File sinks are append-only")
        show_refusal(
            lambda: start_complete_to_files(events, paths.output_for(LESSON, "complete_demo")),
            "Complete mode on a file sink",
        )
        say("""Complete re-sends the whole result table every batch, which a sink can only honour
            by replacing what it wrote before. A file sink only ever adds new files, so it
            accepts append alone. Aggregate with a watermark and append (lesson 02), or write
            complete results to a sink that can overwrite, e.g. a Delta table or foreachBatch.""")

        banner("2. One stream, four queries: console, memory, Parquet and a quarantine")
        print(f"The lesson asks the memory table (every few seconds, and at the end):{FUNNEL_SQL}")
        # Watch the folder while a simulator writes into it; else read the files there once.
        with simulators.file_input_for_lesson(*SIMULATOR, paths.ECOMMERCE_DIR, args) as files:
            queries = start_sinks(events, lines, checkpoints, files.trigger(TRIGGER_INTERVAL))
            run_queries(
                queries, args, until=files.done, every=lambda: print_funnel(spark, "meanwhile")
            )
        print_funnel(spark, "at the end")
        print(
            "Lines each query read this run: "
            + ", ".join(
                f"{query.name} {sum(p['numInputRows'] for p in query.recentProgress)}"
                for query in queries
            )
        )
        print(
            f"Quarantined lines in {paths.display(QUARANTINE_DIR)}:",
            parsing.quarantine_summary(spark, QUARANTINE_DIR),
        )
        say("""The memory table lives in the driver and dies with the run, so its query has no
            checkpoint: it reads the folder from the start every run (Spark refuses to resume an
            append-mode memory sink from a checkpoint, since the rows it had are gone). The
            Parquet and quarantine queries resume after their last batch: run the lesson again
            and they read only new files, so nothing is written twice.""")

        banner("3. The Parquet sink's folder, read back as a batch DataFrame")
        if PARQUET_DIR.is_dir():
            read_parquet_output(spark, PARQUET_DIR).show(truncate=False)
        print(
            f"{paths.display(PARQUET_DIR)} holds one folder per date (date=2025-01-15/ ...) and "
            "_spark_metadata/, the sink's log of committed files."
        )


if __name__ == "__main__":
    run_lesson(main)

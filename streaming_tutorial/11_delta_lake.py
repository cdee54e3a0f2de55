"""11 · Delta Lake: a transactional table as a streaming sink and as a streaming source.

What you'll learn
  - Delta as an append sink, exactly once (its log records each micro-batch of the query):
    a restart adds no duplicate; batch reads meanwhile see committed versions only.
  - COMPLETE mode into Delta (one commit replaces the contents); file sinks refuse it.
  - ``readStream.format("delta")``: a table's commits feed other queries, here an
    aggregation and a ``MERGE`` (upsert) from ``foreachBatch``; a table changed in place
    (by MERGE) streams through its change data feed (``readChangeFeed``).
  - ``DeltaTable.history()`` and time travel (``versionAsOf``).

Run
  python streaming_tutorial/11_delta_lake.py            # --reset: start from empty tables
  Files in data/ecommerce_events and no simulator running: it reads them once. No files: it
  starts the shop simulator (4 files, one every 3 s) and stops once they are read. To run the
  simulator yourself, start it first in a second terminal:
    python data_generators/generate_ecommerce_events.py --count 4 --interval 3
  The tables are under output/11_delta_lake/: events, quarantine, sales_by_category and
  user_last_event.

Practise
  python course.py exercises check 11.1   The latest event per user (build)
  python course.py exercises check 11.2   Exactly once into Delta (build)

What you'll see
  (a first run on an empty folder, which starts the simulator; counts vary with timing)
    a batch read sees version 1: 20 rows
    a batch read sees version 2: 80 rows
    before the restart: 80 rows (80 distinct event ids); after it: 0 new rows -> 80 rows ...
  Complete mode into a parquet sink fails:
    [STREAMING_OUTPUT_MODE.UNSUPPORTED_DATASOURCE] Invalid streaming output mode: complete. ...
  |category   |purchases|units|revenue|
  |Electronics|4        |10   |7749.9 |
  ...
  |version|operation       |outputMode|epochId|numOutputRows|
  |0      |CREATE TABLE    |NULL      |NULL   |NULL         |
  |1      |STREAMING UPDATE|Append    |0      |20           |
  ...
    version 0: 0 rows; version 1: 20 rows; version 2: 80 rows (the latest)
  20 users in output/11_delta_lake/user_last_event
"""

from __future__ import annotations

from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from common import parsing, paths
from common.sales import build_category_sales
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from infra import cli, simulators
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
from teaching import demos

LESSON = "11_delta_lake"
# An upper bound: the lesson stops once the simulator is done and its files are read.
DEFAULT_DURATION = 60
TRIGGER_INTERVAL = "3 seconds"  # one Delta commit (one table version) per micro-batch
SIMULATOR = ("ecommerce", "generate_ecommerce_events.py", ["--count", "4", "--interval", "3"])
# The queries that read a Delta table read what it holds, then stop.
AVAILABLE_NOW = {"availableNow": True}
SHOW_ROWS = 8
# When MERGE updates a user's row: the batch's event is newer (ties broken by event id).
NEWER_EVENT = (
    "s.last_seen > t.last_seen OR (s.last_seen = t.last_seen AND s.last_event_id > t.last_event_id)"
)


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


def read_delta_stream(spark, table: Path) -> DataFrame:
    """A Delta table as a streaming source: every new commit is new input."""
    return (
        spark.readStream.format("delta")
        # A new query reads the table as it is now, then each commit after that; the
        # checkpoint remembers the last version read.
        .load(paths.uri(table))
    )


def read_version(spark, table: Path, version: int | None = None) -> tuple[int, int]:
    """(version, rows) of the table as a batch read sees it: the latest commit, or ``version``
    (time travel)."""
    if version is None:
        version = DeltaTable.forPath(spark, paths.uri(table)).history(1).first().version
    rows = (
        spark.read.format("delta")
        # The table as it was right after commit ``version``.
        .option("versionAsOf", version)
        .load(paths.uri(table))
        .count()
    )
    return version, rows


def read_versions(spark, table: Path) -> list[tuple[int, int]]:
    """(version, rows) of the first versions and of the latest one: time travel with versionAsOf."""
    latest = read_version(spark, table)
    first_versions = range(min(2, latest[0]))  # versions 0 and 1, when later ones exist
    return [read_version(spark, table, version) for version in first_versions] + [latest]


def start_events(parsed: DataFrame, table: Path, checkpoint: Path, trigger: dict):
    """Append every good event to the Delta table, exactly once per checkpoint."""
    # Created empty first (version 0), so batch reads and Delta sources never find no table.
    (
        DeltaTable.createIfNotExists(parsed.sparkSession)
        .location(paths.uri(table))
        .addColumns(ECOMMERCE_EVENT_SCHEMA)
        .execute()
    )
    # The Delta sink writes each batch's files, then commits them together with (query id,
    # batch id) in the table's log. A batch that runs again after a crash finds its id
    # there and is skipped: exactly once, with the checkpoint's help.
    return (
        parsing.valid_records(parsed, ECOMMERCE_EVENT_SCHEMA)
        .writeStream.format("delta")
        .outputMode("append")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .start(paths.uri(table))
    )


def start_quarantine(parsed: DataFrame, table: Path, checkpoint: Path, trigger: dict):
    """Lines that are no usable event, kept whole with their reason in a Delta table of their
    own."""
    return (
        parsing.quarantined(parsed, "source_file")
        .writeStream.format("delta")
        .outputMode("append")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .start(paths.uri(table))
    )


def start_complete(
    totals: DataFrame, sink_format: str, path: Path, checkpoint: Path, trigger: dict = AVAILABLE_NOW
):
    """Keep ``path`` equal to the current totals: complete mode, the whole result every batch."""
    # Delta overwrites the table with it in one transaction; a file sink (parquet, json,
    # csv) only adds files, so Spark refuses complete mode for it at start().
    return (
        totals.writeStream.format(sink_format)
        .outputMode("complete")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .start(paths.uri(path))
    )


def build_latest_per_user(events: DataFrame) -> DataFrame:
    """One row per user: their latest event in this (batch) DataFrame."""
    # MERGE needs at most one source row per target row, so a batch with three events of
    # the same user is reduced to the latest one first (ties broken by event id).
    latest_first = Window.partitionBy("user_id").orderBy(
        F.col("timestamp").desc(), F.col("event_id").desc()
    )
    return (
        events.withColumn("rank", F.row_number().over(latest_first))
        .filter("rank = 1")
        .select(
            "user_id",
            F.col("event_id").alias("last_event_id"),
            F.col("event_type").alias("last_event_type"),
            F.col("product_id").alias("last_product_id"),
            F.col("timestamp").alias("last_seen"),
        )
    )


def write_latest_per_user(batch: DataFrame, table: Path) -> None:
    """Upsert one row per user into the Delta table with MERGE (creating the table if needed)."""
    spark = batch.sparkSession
    latest = build_latest_per_user(batch)
    if not DeltaTable.isDeltaTable(spark, paths.uri(table)):
        latest.limit(0).write.format("delta").save(paths.uri(table))
    (
        DeltaTable.forPath(spark, paths.uri(table))
        .alias("t")
        .merge(latest.alias("s"), "t.user_id = s.user_id")
        # Only move forward in time: replaying an older (or the same) batch changes nothing.
        .whenMatchedUpdateAll(condition=NEWER_EVENT)
        .whenNotMatchedInsertAll()
        .execute()
    )


def start_user_merge(
    events: DataFrame, table: Path, checkpoint: Path, trigger: dict = AVAILABLE_NOW
):
    """A query that MERGEs each micro-batch of events into the per-user table."""
    return (
        events.writeStream.foreachBatch(
            foreach_batch(lambda batch, batch_id: write_latest_per_user(batch, table))
        )
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .start()
    )


def read_history(spark, table: Path) -> DataFrame:
    """The table's commits, oldest first: what each one did, for which micro-batch (epochId)."""
    return (
        DeltaTable.forPath(spark, paths.uri(table))
        .history()
        .select(
            "version",
            "operation",
            F.col("operationParameters.outputMode").alias("outputMode"),
            F.col("operationParameters.epochId").alias("epochId"),
            F.col("operationMetrics.numOutputRows").alias("numOutputRows"),
        )
        .orderBy("version")
    )


def read_counts(spark, table: Path) -> tuple[int, int]:
    """(rows, distinct event ids) of the events table."""
    row = (
        spark.read.format("delta")
        .load(paths.uri(table))
        .agg(F.count("*"), F.countDistinct("event_id"))
        .first()
    )
    return row[0], row[1]


def show_batch_read(spark, table: Path) -> None:
    """Print what a batch read of the table sees now: its latest version and its rows."""
    version, rows = read_version(spark, table)
    print(f"  a batch read sees version {version}: {rows} rows")


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True)
    args = parser.parse_args(argv)
    folder = paths.output_for(LESSON)
    checkpoints = checkpoint_root(LESSON, args)
    events_table = folder / "events"
    with lesson_session(LESSON, args, delta=True) as spark:
        banner("1. Events stream into a Delta table (append); batch reads while it writes")
        parsed = read_events(spark, paths.ECOMMERCE_DIR)
        with simulators.file_input_for_lesson(*SIMULATOR, paths.ECOMMERCE_DIR, args) as shop_files:
            trigger = shop_files.trigger(TRIGGER_INTERVAL)
            queries = [
                start_events(parsed, events_table, checkpoints / "events", trigger),
                start_quarantine(
                    parsed, folder / "quarantine", checkpoints / "quarantine", trigger
                ),
            ]
            # Every few seconds while the queries write: what a batch read of the table sees.
            run_queries(
                queries,
                args,
                until=shop_files.done,
                every=lambda: show_batch_read(spark, events_table),
            )
        show_batch_read(spark, events_table)
        say("""Each micro-batch is one commit in the table's _delta_log. A batch read sees the
            latest committed version, never a half-written batch. Unusable lines went to the
            quarantine table, with their reason.""")

        banner("2. A restart on the same checkpoint adds nothing twice")
        before = read_counts(spark, events_table)
        finish([start_events(parsed, events_table, checkpoints / "events", AVAILABLE_NOW)])
        after = read_counts(spark, events_table)
        print(
            f"  before the restart: {before[0]} rows ({before[1]} distinct event ids); after it: "
            f"{after[0] - before[0]} new rows -> {after[0]} rows ({after[1]} distinct event ids)"
        )
        say("""The checkpoint knows which files were read, the table's log which batches it
            holds: a restart reads only new files. A NEW checkpoint would read every file
            again and append duplicates: checkpoint and table belong together.""")
        if after[0] == 0:
            say(
                "The events table is empty: no shop events arrived. Start the simulator "
                "(see Run), then run again."
            )
            return

        banner("3. COMPLETE mode: a parquet sink refuses it, a Delta sink takes it")
        # Lesson 10's sales per category, now over the whole events table, read as a stream.
        # No watermark: the totals can change with any new purchase, so complete mode.
        sales = build_category_sales(read_delta_stream(spark, events_table))
        demos.show_refusal(
            lambda: start_complete(
                sales, "parquet", folder / "sales_parquet", checkpoints / "sales_parquet"
            ),
            "Complete mode into a parquet sink",
        )
        sales_table = folder / "sales_by_category"
        finish([start_complete(sales, "delta", sales_table, checkpoints / "sales_by_category")])
        (
            spark.read.format("delta")
            .load(paths.uri(sales_table))
            .orderBy("category")
            .show(truncate=False)
        )
        say("""A file sink only adds files: it cannot replace yesterday's totals. Delta replaces
            the table's contents in one commit per batch, so readers always see one complete
            result. Its source: the events table, read with readStream.format("delta").""")

        banner("4. History and time travel")
        read_history(spark, events_table).show(SHOW_ROWS, truncate=False)
        versions = [
            f"version {version}: {rows} rows"
            for version, rows in read_versions(spark, events_table)
        ]
        print("  " + "; ".join(versions) + " (the latest)")
        say("""One version per commit, a STREAMING UPDATE per micro-batch (epochId: the batch
            id). option("versionAsOf", N) reads the table as it was after commit N: audits,
            reports.""")

        banner("5. MERGE from foreachBatch: the latest event of every user")
        users = folder / "user_last_event"
        events_stream = read_delta_stream(spark, events_table)
        finish([start_user_merge(events_stream, users, checkpoints / "user_last_event")])
        latest_users = spark.read.format("delta").load(paths.uri(users))
        latest_users.orderBy(F.col("last_seen").desc(), "user_id").show(SHOW_ROWS, truncate=False)
        print(f"{latest_users.count()} users in {paths.display(users)}")
        say("""Another query read the events table as a stream and MERGEd one row per user per
            micro-batch: matched users updated, new ones inserted, only forward in time, so a
            replayed batch changes nothing. Run again: every query continues from its
            checkpoint.""")
        say("""user_last_event changes in place, so it cannot be read as a stream the way the
            events table was: a Delta source takes appended rows only and fails at the first
            commit in which MERGE updated rows (DELTA_SOURCE_TABLE_IGNORE_CHANGES; the option
            skipChangeCommits skips such commits instead). To stream a table's changes, turn on
            its change data feed (table property delta.enableChangeDataFeed = true, before the
            changes) and read it with .option("readChangeFeed", "true"): each row comes with
            _change_type (insert, update_preimage, update_postimage, delete), _commit_version
            and _commit_timestamp. A new query first reads the table as it is, every row an
            insert; startingVersion reads the changes from an older version on.""")


if __name__ == "__main__":
    run_lesson(main)

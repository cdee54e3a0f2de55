"""16 · Fault tolerance: kill -9 a streaming query mid-batch, restart it, and count what was lost.

What you'll learn
  - Exactly once after real kills: a replayable source + offsets logged first + an idempotent sink.
  - What a checkpoint holds and how a restart reads it; a windowed count survives the kills,
    another grouping key is refused (and the ways out).
  - For contrast: a ``batch.write`` in foreachBatch that ignores the batch id writes rows twice
    (Spark's own file sink does not); a socket loses lines.
  - foreach after a kill: a ForeachWriter that skips a (partition, epoch) it wrote loses rows
    when the replay splits the epoch otherwise; one keyed by the record id does not.
  - What each sink guarantees when a batch runs again: files and Delta exactly-once, Kafka
    at-least-once, foreachBatch keyed by query + batch id, foreach by a key from the data,
    memory and console not.

Run
  python streaming_tutorial/16_fault_tolerance.py
  It writes its own input (records R-0001..., a fixed seed), runs the queries in a child process,
  kills it with SIGKILL three times (logs: output/16_fault_tolerance/this-run/logs), then restarts
  them itself.

Practise
  python course.py exercises check 16.1   A sink that survives kill -9 (survive)
  python course.py exercises check 16.2   What an old checkpoint survives (predict)

What you'll see
  kill 1, before the offsets of part-b.json are written: events: offsets/ 0, commits/ 0; ...
  kill 2, after the sink wrote batch 1, before its commit: events: offsets/ 0 1, commits/ 0; ...
  Delta table (txnAppId/txnVersion): rows lost: 0, rows duplicated: 0
  batch.write.json() (no batch id):  rows lost: 0, rows duplicated: 12
  Checkpoint checkpoints/16_fault_tolerance/this-run/windows
    query id        6fc2b956-0958-40d6-be03-1f47cd54ef0a
    offsets/        batches 0 1
    commits/        batches 0 1
    last committed  batch 1
    not committed   none
    watermark       2025-01-15 10:30:58 UTC (offsets/1)
    source 0        file source, log offset 1
                    files read, by batch (sources/0/, 2 in all): ...
    state           stateful operators (state-metadata; rows: statestore)
                    id  operator        store    partitions  batches  rows
                    0   stateStoreSave  default  2           0-1      4
    sink            Delta table output/16_fault_tolerance/this-run/windows (version 1)
                    this query's last transaction: batch 1 (txn version 1, table version 1)
  killed twice: 4 windows; uninterrupted run: 4 windows; equal: True
  Counting per window AND user on the old checkpoint starts, then fails (query.exception()):
    [STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match existing state ...
  A restart on the same checkpoint, once a line arrives, starts, then fails (query.exception()):
    Offsets committed out of order: 1 followed by -1 SQLSTATE: XXKST
  ...
  epoch 0 in the child, spark.sql.files.maxPartitionBytes 584:
    partition 0 = R-0001..R-0007, partition 1 = R-0008..R-0012
  kill 3, after partition 0 of epoch 0 wrote 7 rows, before partition 1 did
  epoch 0 again, in this process, with Spark's default split:
    partition 0 = R-0001..R-0012
  ForeachWriter guarded by (partition, epoch): rows lost: 5, rows duplicated: 0
    lost for good: R-0008, R-0009, R-0010, R-0011, R-0012
  ForeachWriter keyed by record_id:            rows lost: 0, rows duplicated: 0
    sink               after a replay      how
    files              exactly-once        _spark_metadata lists each batch's files
    Delta              exactly-once        its log holds (query id, batch id)
  ...
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace

import lesson16_crash_harness as crash
from pyspark import cloudpickle
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from common import config, paths
from common.batch_ids import query_id
from infra import checkpoints, cli
from infra.runner import (
    banner,
    checkpoint_root,
    finish,
    foreach_batch,
    lesson_session,
    run_lesson,
    say,
)
from teaching import demos, inspect_checkpoint, narration

LESSON = "16_fault_tolerance"
SCHEMA = "record_id STRING, user_id STRING, amount DOUBLE, event_time TIMESTAMP"
SEED = 16  # same seed, same records, same windows on every run
# file -> (first record, count): A, then B mid-crash, C later
PARTS = {
    "a": (1, 12),
    "b": (13, 12),
    "c": (25, 4),
}
WINDOW = "1 minute"
# The records are out of order by at most 5 s: none is ever late.
WATERMARK = "1 minute"
# After batch 0 the child plans nothing more: new files stay unlogged until it is killed.
# Spark fires a processing-time trigger at the next whole multiple of its interval since
# 1970-01-01 UTC, not one interval after the last batch: "1 hour" would plan a new batch at the
# top of the next hour, which may come a second after batch 0. The next multiple of 36,500 days
# is in December 2069, whatever the clock says today.
WAIT_FOR_KILL = {"processingTime": "36500 days"}
AVAILABLE_NOW = {"availableNow": True}
SOCKET_TRIGGER = "200 milliseconds"  # the socket query looks for new lines this often
# What each sink guarantees when Spark runs a batch again after a failure (section 7).
SINK_GUARANTEES = [
    ("files", "exactly-once", "_spark_metadata lists each batch's files"),
    ("Delta", "exactly-once", "its log holds (query id, batch id)"),
    ("Kafka, both modes", "at-least-once", "a replay sends again: dedupe by key"),
    ("foreachBatch", "at-least-once", "exactly-once if keyed by query + batch id"),
    ("foreach", "at-least-once", "idempotent if keyed by the data (section 6)"),
    ("memory, console", "not fault-tolerant", "nothing survives the process"),
]
# Section 6: writeStream.foreach after a kill. The file Spark splits into partitions.
FOREACH_PART = "a"
# Before the kill the child reads that file in two partitions: it caps each split at half the
# file (spark.sql.files.maxPartitionBytes). The replay runs with Spark's default cap, 128 MB: one.
SPLIT_BYTES_CONF = "spark.sql.files.maxPartitionBytes"
# The child's foreach tasks: partition 0 stops after it wrote epoch 0, partition 1 before.
FOREACH_PAUSES = "foreach-part0@after-sink:0,foreach-part1@before-sink:0"
SQLITE_TIMEOUT = 30  # seconds a writer waits for another task's transaction on the same file
# The (partition, epoch) guard's tables: the rows, and the (partition, epoch) pairs it wrote.
GUARDED_ROWS = "CREATE TABLE IF NOT EXISTS events (record_id TEXT NOT NULL, amount REAL NOT NULL)"
WRITTEN_PARTITIONS = """CREATE TABLE IF NOT EXISTS written_partitions (
    partition_id INTEGER NOT NULL, epoch_id INTEGER NOT NULL,
    PRIMARY KEY (partition_id, epoch_id))"""
# The data-keyed writer's table: one row per record id, whichever task brings it.
KEYED_ROWS = "CREATE TABLE IF NOT EXISTS events (record_id TEXT PRIMARY KEY, amount REAL NOT NULL)"
INSERT_ONCE = (
    "INSERT INTO events (record_id, amount) VALUES (?, ?) ON CONFLICT (record_id) DO NOTHING"
)


def read_records(spark, folder: Path) -> DataFrame:
    """The input files as a stream: a file source can replay, because its files stay where
    they are."""
    return (
        spark.readStream.schema(SCHEMA)
        # A checkpoint's offsets name the files each batch read: a replay reads them again.
        .json(paths.uri(folder))
    )


def write_part(where, part: str) -> None:
    """Write one input file atomically: the records of ``PARTS[part]``, from a fixed seed."""
    first, count = PARTS[part]
    records = crash.numbered_records(first, count, seed=SEED, base_time=config.BASE_EVENT_TIME)
    crash.write_records(where.input, f"part-{part}.json", records)


def build_window_counts(records: DataFrame, *keys: str) -> DataFrame:
    """Records and amounts per 1-minute event-time window (and per ``keys``): state that must
    survive a crash."""
    return (
        records.withWatermark("event_time", WATERMARK)
        .groupBy(F.window("event_time", WINDOW), *keys)
        .agg(
            F.count("*").alias("records"),
            F.round(F.sum("amount"), 2).alias("amount"),
        )
        .select(F.col("window.start").alias("window_start"), *keys, "records", "amount")
    )


def write_events(batch: DataFrame, batch_id: int, where) -> None:
    """The foreachBatch function: each batch to a Delta table once, and to plain JSON files
    (``batch.write``, not Spark's file sink) for contrast."""
    batch.persist()
    # Delta commits (txnAppId, txnVersion) with the data, atomically: a replayed batch id is
    # found in the table's log and skipped.
    (
        batch.write.format("delta")
        .mode("append")
        .option("txnAppId", query_id(batch))
        .option("txnVersion", batch_id)
        .save(paths.uri(where.events))
    )
    # A plain batch file append knows no batch id: a replayed batch adds its rows again. (Spark's
    # streaming file sink, writeStream.format("json"), would not: see section 7.)
    batch.write.mode("append").json(paths.uri(where.plain))
    batch.unpersist()


def write_windows(batch: DataFrame, batch_id: int, table: Path) -> None:
    """Replace the table with the batch (complete mode: the whole result), once per batch id."""
    # Delta skips a replayed batch id without reading the batch; a stateful query whose batch
    # was not read in full fails (STATE_STORE_COMMIT_VALIDATION_FAILED). So read it all first.
    batch.persist().count()
    (
        batch.write.format("delta")
        .mode("overwrite")  # a reader sees the old result or the new one, never a mix
        .option("txnAppId", query_id(batch))
        .option("txnVersion", batch_id)
        .save(paths.uri(table))
    )
    batch.unpersist()


def start_events(records: DataFrame, where, trigger: dict) -> StreamingQuery:
    """The events query; crash.pausable lets the lesson stop it before or after its sink."""
    write = crash.pausable(lambda batch, batch_id: write_events(batch, batch_id, where), "events")
    return (
        records.writeStream.foreachBatch(write)
        .outputMode("append")
        .option("checkpointLocation", paths.uri(where.checkpoints / "events"))
        .trigger(**trigger)
        .start()
    )


def start_windows(
    counts: DataFrame, table: Path, checkpoint: Path, trigger: dict = AVAILABLE_NOW
) -> StreamingQuery:
    """The stateful query: complete mode, every batch's whole result into ``table``."""
    write = foreach_batch(
        crash.pausable(lambda batch, batch_id: write_windows(batch, batch_id, table), "windows")
    )
    return (
        counts.writeStream.foreachBatch(write)
        .outputMode("complete")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .start()
    )


def start_both(spark, where, trigger: dict) -> list[StreamingQuery]:
    """The child's two queries on one file source: events into Delta, window counts into Delta."""
    records = read_records(spark, where.input)
    counts = build_window_counts(records)
    return [
        start_events(records, where, trigger),
        start_windows(counts, where.windows, where.checkpoints / "windows", trigger),
    ]


def start_uninterrupted(spark, where) -> StreamingQuery:
    """The same windowed count on the same files, on a checkpoint of its own, never killed."""
    counts = build_window_counts(read_records(spark, where.input))
    return start_windows(
        counts, where.output / "windows_uninterrupted", where.checkpoints / "windows_uninterrupted"
    )


def start_by_user(spark, where, checkpoint: Path) -> StreamingQuery:
    """The changed query: counts per window AND user (another state key), into a table of its
    own."""
    counts = build_window_counts(read_records(spark, where.input), "user_id")
    return start_windows(counts, where.output / "windows_by_user", checkpoint)


def start_filtered(spark, where) -> StreamingQuery:
    """A change the checkpoint allows: a filter before the aggregation (state keys and values
    unchanged)."""
    records = read_records(spark, where.input).filter("amount > 0")
    return start_windows(build_window_counts(records), where.windows, where.checkpoints / "windows")


def start_lines(spark, server: crash.LineServer, seen: list, checkpoint: Path) -> StreamingQuery:
    """Lines from a TCP server, collected per batch into ``seen``: the source keeps no copy,
    only a count of the lines it received."""

    def collect(batch: DataFrame, batch_id: int) -> None:
        seen.extend(row.value for row in batch.collect())

    return (
        spark.readStream.format("socket")
        .option("host", server.host)
        .option("port", server.port)
        .load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(processingTime=SOCKET_TRIGGER)
        .start()
    )


# writeStream.foreach: one row at a time, on the executors. Two writers into SQLite.


class PartitionEpochGuard:
    """A ForeachWriter that skips a (partition, epoch) it wrote before: the replay guard that
    pyspark 4.2's foreach docstring still suggests. It holds only if a replayed epoch is split
    into the same partitions, which nothing promises: section 6 breaks it."""

    def __init__(self, database: Path):
        self.database = str(database)

    def open(self, partition_id: int, epoch_id: int) -> bool:
        self.written = (partition_id, epoch_id)
        self.rows = []
        with closing(sqlite3.connect(self.database, timeout=SQLITE_TIMEOUT)) as db:
            with db:  # one transaction
                db.execute(GUARDED_ROWS)
                db.execute(WRITTEN_PARTITIONS)
            seen = db.execute(
                "SELECT 1 FROM written_partitions WHERE partition_id = ? AND epoch_id = ?",
                self.written,
            ).fetchone()
        # False: Spark skips this task's rows, whatever rows the partition holds this time.
        self.writing = seen is None
        return self.writing

    def process(self, row: Row) -> None:
        self.rows.append((row.record_id, row.amount))

    def close(self, error: BaseException | None) -> None:
        if error is not None or not self.writing:
            return
        with closing(sqlite3.connect(self.database, timeout=SQLITE_TIMEOUT)) as db:
            with db:  # the rows and the (partition, epoch) mark: both or neither
                db.executemany("INSERT INTO events (record_id, amount) VALUES (?, ?)", self.rows)
                db.execute(
                    "INSERT INTO written_partitions (partition_id, epoch_id) VALUES (?, ?)",
                    self.written,
                )


class RecordKeyedWriter:
    """A ForeachWriter keyed by the data: a record id already in the table is not written again,
    whichever partition, epoch or run brings it. At-least-once delivery, written once."""

    def __init__(self, database: Path):
        self.database = str(database)

    def open(self, partition_id: int, epoch_id: int) -> bool:
        # partition_id and epoch_id say which task this is (for a log line); they are no key.
        self.rows = []
        return True

    def process(self, row: Row) -> None:
        self.rows.append((row.record_id, row.amount))

    def close(self, error: BaseException | None) -> None:
        if error is not None:
            return  # Spark retries the task (or replays the epoch): its rows come again
        with closing(sqlite3.connect(self.database, timeout=SQLITE_TIMEOUT)) as db:
            with db:
                db.execute(KEYED_ROWS)
                db.executemany(INSERT_ONCE, self.rows)


class BothWriters:
    """One foreach sink that hands every call to several writers, so they see the very same
    partitions of the very same epochs: only their keys differ."""

    def __init__(self, *writers):
        self.writers = writers

    def open(self, partition_id: int, epoch_id: int) -> bool:
        self.wanted = [writer.open(partition_id, epoch_id) for writer in self.writers]
        return any(self.wanted)

    def process(self, row: Row) -> None:
        for writer, wanted in zip(self.writers, self.wanted, strict=True):
            if wanted:
                writer.process(row)

    def close(self, error: BaseException | None) -> None:
        for writer in self.writers:
            writer.close(error)


def start_foreach(spark, where, pausable: bool = False) -> StreamingQuery:
    """The foreach query: section 6's input to both writers, row by row on the executors."""
    writer = BothWriters(
        PartitionEpochGuard(where.output / "foreach_guard.db"),
        RecordKeyedWriter(where.output / "foreach_keyed.db"),
    )
    if pausable:  # in the child: its tasks stop where the lesson kills it
        writer = crash.PausableWriter(writer, "foreach")
    send_writers_by_value()
    return (
        read_records(spark, where.foreach_input)
        # An instance: Spark calls open(partition_id, epoch_id), process(row), close(error) in
        # every task, on a fresh copy of it.
        .writeStream.foreach(writer)
        .option("checkpointLocation", paths.uri(where.checkpoints / "foreach"))
        .trigger(availableNow=True)
        .start()
    )


def send_writers_by_value() -> None:
    """Imported (the tests), this file is a module Python workers cannot import (its name starts
    with a digit): have cloudpickle send the writers by value, as for __main__."""
    if __name__ != "__main__":
        cloudpickle.register_pickle_by_value(sys.modules[__name__])


def split_bytes(file: Path) -> int:
    """Half the file, rounded up: a cap on Spark's splits that reads it in two partitions."""
    return -(-file.stat().st_size // 2)


def foreach_after_a_kill(spark, where, child) -> None:
    """Section 6: epoch 0 written in two partitions, a kill between them, a replay in one."""
    first, count = PARTS[FOREACH_PART]
    records = crash.numbered_records(first, count, seed=SEED, base_time=config.BASE_EVENT_TIME)
    file = crash.write_records(where.foreach_input, f"part-{FOREACH_PART}.json", records)
    split = split_bytes(file)
    spark.conf.set(SPLIT_BYTES_CONF, split)
    before = crash.partition_ranges(spark.read.schema(SCHEMA).json(paths.uri(where.foreach_input)))
    spark.conf.unset(SPLIT_BYTES_CONF)
    print(f"epoch 0 in the child, {SPLIT_BYTES_CONF} {split}:\n  {before}")
    with child(
        "3-foreach", "--child", "foreach", "--split-bytes", str(split), pause_at=FOREACH_PAUSES
    ) as process:
        process.wait_for_marker("after-sink", 0, "foreach-part0")
        written = len(crash.sqlite_ids(where.output / "foreach_guard.db"))
        print(f"kill 3, after partition 0 of epoch 0 wrote {written} rows, before partition 1 did")
        process.kill()
    again = crash.partition_ranges(spark.read.schema(SCHEMA).json(paths.uri(where.foreach_input)))
    print(f"epoch 0 again, in this process, with Spark's default split:\n  {again}")
    finish([start_foreach(spark, where)])
    wanted = [record["record_id"] for record in records]
    guarded = crash.sqlite_ids(where.output / "foreach_guard.db")
    keyed = crash.sqlite_ids(where.output / "foreach_keyed.db")
    lost = sorted(set(wanted) - set(guarded))
    print(
        f"ForeachWriter guarded by (partition, epoch): {crash.tally(wanted, guarded)}\n"
        f"  lost for good: {', '.join(lost) or 'none'}\n"
        f"ForeachWriter keyed by record_id:            {crash.tally(wanted, keyed)}"
    )


def read_ids(spark, where) -> tuple[list, list]:
    """The record ids the Delta table holds and those the plain JSON files hold, one per row."""
    delta = spark.read.format("delta").load(paths.uri(where.events)).select("record_id")
    plain = spark.read.schema(SCHEMA).json(paths.uri(where.plain)).select("record_id")
    delta_ids = [row[0] for row in delta.collect()]
    plain_ids = [row[0] for row in plain.collect()]
    return delta_ids, plain_ids


def read_tallies(spark, where) -> tuple[crash.Tally, crash.Tally]:
    """Rows lost and duplicated in the Delta table and in the plain files, against the input
    files' ids."""
    wanted = [
        row[0]
        for row in spark.read.schema(SCHEMA)
        .json(paths.uri(where.input))
        .select("record_id")
        .collect()
    ]
    delta_ids, plain_ids = read_ids(spark, where)
    return crash.tally(wanted, delta_ids), crash.tally(wanted, plain_ids)


def read_windows(spark, table: Path) -> list[tuple]:
    return [
        tuple(row)
        for row in spark.read.format("delta")
        .load(paths.uri(table))
        .orderBy("window_start")
        .collect()
    ]


def logged_batches(where) -> str:
    """What the two queries' offsets/ and commits/ hold right now."""
    return crash.logged_batches_of(where.checkpoints, "events", "windows")


def run_folders(args) -> SimpleNamespace:
    """This run's folders: checkpoints and outputs (the input files, the tables, the child's
    logs)."""
    output = paths.output_for(LESSON, "this-run")
    return SimpleNamespace(
        output=output,
        input=output / "input",
        events=output / "events",
        plain=output / "plain",
        windows=output / "windows",
        logs=output / "logs",
        foreach_input=output / "foreach_input",
        checkpoints=checkpoint_root(LESSON, args) / "this-run",
    )


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, simulator=False)
    # The process we kill: this file again, with --child.
    parser.add_argument("--child", choices=("wait", "finish", "foreach"), help=argparse.SUPPRESS)
    parser.add_argument("--split-bytes", type=int, help=argparse.SUPPRESS)  # --child foreach
    args = parser.parse_args(argv)
    where = run_folders(args)
    if args.child == "foreach":  # in the child: the foreach query, split small, until killed
        with lesson_session(LESSON, args) as spark:
            spark.conf.set(SPLIT_BYTES_CONF, args.split_bytes)
            return finish([start_foreach(spark, where, pausable=True)])
    if args.child:  # in the child: run both queries until killed ("wait") or done ("finish")
        if args.child == "wait":
            trigger = WAIT_FOR_KILL
        else:
            trigger = AVAILABLE_NOW
        with lesson_session(LESSON, args, delta=True) as spark:
            return finish(start_both(spark, where, trigger))
    for folder in (where.output, where.checkpoints):  # only these this-run folders are ever deleted
        paths.remove_tree(folder, allow_outside=True)
    child = crash.ChildRuns.of_lesson(__file__, args, where.logs)  # runs this file with --child
    with lesson_session(LESSON, args, delta=True) as spark:
        banner("1. Kill -9 twice in the middle of a batch, restart, count")
        write_part(where, "a")
        with child("1-wait", "--child", "wait") as process:
            process.wait_for_commit(0, where.checkpoints / "events", where.checkpoints / "windows")
            write_part(where, "b")  # new input, in no offsets file yet
            print(f"kill 1, before the offsets of part-b.json are written: {logged_batches(where)}")
            process.kill()
        with child("2-after-sink", "--child", "finish", pause_at="after-sink:1") as process:
            process.wait_for_marker("after-sink", 1, "events", "windows")
            print(
                f"kill 2, after the sink wrote batch 1, before its commit: {logged_batches(where)}"
            )
            process.kill()
        # The restart, in this process: no kill this time.
        finish(start_both(spark, where, AVAILABLE_NOW))
        delta, plain = read_tallies(spark, where)
        print(
            f"after the restart: {logged_batches(where)}\n"
            f"Delta table (txnAppId/txnVersion): {delta}\n"
            f"batch.write.json() (no batch id):  {plain}"
        )
        say("""Both 0 for Delta: the file source can replay, Spark logs a batch's offsets BEFORE
            it runs it, and the sink is idempotent. Kill 1 left part-b.json in no offsets file:
            the restart planned it as batch 1. Kill 2 left offsets/1 without commits/1: the
            restart ran batch 1 again, same id, same files; Delta found (query id, 1) in its log
            and skipped it, while batch.write.json() appended batch 1 a second time.""")
        say("""Those JSON files are a plain batch write inside foreachBatch, not Spark's file
            sink. writeStream.format("json") is exactly-once by itself: it lists each batch's
            files in _spark_metadata in its output folder and skips a batch id listed there.
            Read its output through that folder (spark.read on it uses the list): files of a
            batch cut off by a crash may lie beside the listed ones, and a reader of the files
            themselves (a glob, another tool) would count them.""")

        banner("2. The checkpoint folder, after the crashes")
        # The course's checkpoint inspector, as `python course.py checkpoint DIR` runs it.
        print(
            inspect_checkpoint.report(
                where.checkpoints / "windows", spark=spark, sink=where.windows
            ),
            flush=True,
        )
        say("""What each part holds: metadata, the query id (the same across restarts);
            offsets/, each batch's input range, written BEFORE the batch runs, and on its
            second line the watermark; commits/, each batch that finished, written AFTER its
            sink; sources/, the file source's log of the files each batch read; state/, the
            stateful operators' state, one version per batch, read back here by Spark's
            state-metadata and statestore readers. The Delta table keeps (query id, batch id)
            as its txn: the sink's own record of the last batch it took.""")
        say("""A restart reads metadata (the query id), the last offsets file, the last commit.
            offsets/N without commits/N means batch N may be half written: it runs again with
            those offsets on the state/ of batch N-1. With both, batch N+1 starts after N.""")

        banner("3. The windowed count survived both kills")
        finish([start_uninterrupted(spark, where)])
        killed = read_windows(spark, where.windows)
        whole = read_windows(spark, where.output / "windows_uninterrupted")
        narration.print_table(
            ("window_start", "records", "amount"), [(str(w)[11:16], r, a) for w, r, a in killed]
        )
        print(
            f"killed twice: {len(killed)} windows; uninterrupted run: {len(whole)} windows; "
            f"equal: {killed == whole}"
        )
        say("""Uninterrupted: the same query on the same files, in this process, on a checkpoint
            of its own. The killed one restored counts from state/, its watermark from offsets/.""")

        banner("4. An incompatible change: another grouping key on the same checkpoint")
        write_part(where, "c")
        demos.show_refusal(
            lambda: start_by_user(spark, where, where.checkpoints / "windows"),
            "Counting per window AND user on the old checkpoint",
        )
        say("""The state holds one count per window; the changed query wants one per window and
            user. Spark compares the key schema in state/ with the new one at the first batch
            and stops rather than read wrong state. Two ways out:""")
        finish([start_by_user(spark, where, where.checkpoints / "windows_by_user")])
        total = sum(count for _, count in PARTS.values())
        print(f"  a) a new checkpoint: all {total} records read again, old state unused")
        finish([start_filtered(spark, where)])
        print(
            "  b) a change the checkpoint allows, a filter before the aggregation: runs on, "
            f"now after batch {checkpoints.last_commit(where.checkpoints / 'windows')}"
        )

        banner("5. Socket input, for contrast: lines sent while the query was down are gone")
        crash.socket_gap(
            lambda server, seen, checkpoint: start_lines(spark, server, seen, checkpoint),
            where.checkpoints,
        )
        say("""A socket keeps no history; its offsets only count one connection's lines. On the
            old checkpoint that count restarts below the committed one and the query fails; on
            a new one it runs, but what was sent while no query listened is gone. Use files or
            Kafka.""")

        banner(
            "6. foreach after a kill: a (partition, epoch) guard loses rows, a record id does not"
        )
        say("""writeStream.foreach calls a writer's open(partition_id, epoch_id), process(row) and
            close(error) in every task. pyspark 4.2's docstring says a (partition, epoch) holds
            the same rows every time it runs, so open() may skip one it wrote before. Spark's
            own Scala docs of ForeachWriter say the opposite since Spark 3.0 (SPARK-28650): a
            replayed epoch may be split into other partitions (another core count, another
            file split, other executors). Both writers below get the same rows from one query;
            the child splits the file in two and is killed between its two partitions; the
            replay here splits it as Spark does by default.""")
        foreach_after_a_kill(spark, where, child)
        say("""The replay's partition 0 held every row. The guard found (0, 0) among the pairs
            it wrote and skipped the partition: the rows that were in partition 1 before the
            kill are lost for good, and the query reports success. Had the replay been split
            finer, the guard would have written some rows twice instead. The writer keyed by
            record_id wrote each record once, whatever the split: foreach is at-least-once,
            and only a key from the data (an event id, with an upsert or INSERT ... ON CONFLICT
            DO NOTHING) makes it idempotent. For exactly-once per batch, write in foreachBatch,
            where one transaction can hold the whole batch and its batch id (lesson 10).""")

        banner("7. What each sink guarantees when a batch runs again")
        narration.print_table(("sink", "after a replay", "how"), SINK_GUARANTEES)
        say("""A restart re-runs the last uncommitted batch with the same input (section 2), so
            after a failure a sink may be given a batch twice. Spark's file sink and Delta sink
            skip a batch id they already hold. The Kafka sink cannot take a message back, in
            micro-batches and in real-time mode alike (lesson 13): readers dedupe by key.
            foreachBatch is at-least-once unless you key each write by the query id and the
            batch id: Delta's txnAppId/txnVersion as in section 1, or lesson 10's database
            upsert that records the batch id in the same transaction. foreach is at-least-once
            and becomes idempotent only by a key from the data (section 6): its (partition,
            epoch) is no key. The memory and console sinks keep nothing across a restart (a
            memory table in complete mode is rebuilt from the query's state: lesson 17).""")


if __name__ == "__main__":
    run_lesson(main)

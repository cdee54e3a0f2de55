"""16 · Fault tolerance: kill -9 a streaming query mid-batch, restart it, and count what was lost.

What you'll learn
  - Exactly once after real kills: a replayable source + offsets logged first + an idempotent sink.
  - What a checkpoint holds and how a restart reads it; a windowed count survives the kills, another
    grouping key is refused (and the ways out).
  - For contrast: a sink that ignores the batch id writes rows twice; a socket loses lines.

Run
  python streaming_tutorial/16_fault_tolerance.py
  It writes its own input (records R-0001..., a fixed seed), runs the queries in a child process, kills
  it with SIGKILL twice (logs: output/16_fault_tolerance/this-run/logs), then restarts them itself.

What you'll see
  kill 1, before the offsets of part-b.json are written: events: offsets/ 0, commits/ 0; windows: ...
  kill 2, after the sink wrote batch 1, before its commit: events: offsets/ 0 1, commits/ 0; windows: ...
  Delta table (txnAppId/txnVersion): rows lost: 0, rows duplicated: 0
  plain JSON files (no batch id):    rows lost: 0, rows duplicated: 12
  offsets/1:
    {"batchWatermarkMs":1736937058000,"batchTimestampMs":1795437577412,"conf":{"spark.sql.streaming.st...
    {"logOffset":1}
  killed twice: 4 windows; uninterrupted run: 4 windows; equal: True
  Counting per window AND user on the old checkpoint starts, then fails (query.exception()):
    [STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match existing state key schema.
  A restart on the same checkpoint, once a line arrives, starts, then fails (query.exception()):
    Offsets committed out of order: 1 followed by -1 SQLSTATE: XXKST
"""

from __future__ import annotations

import argparse
from pathlib import Path
from types import SimpleNamespace

import lesson16_crash_harness as crash
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import config, paths
from infra import cli
from infra.runner import (
    banner,
    checkpoint_root,
    finish,
    foreach_batch,
    lesson_session,
    run_lesson,
    say,
)
from teaching import checkpoints, demos, narration

LESSON = "16_fault_tolerance"
SCHEMA = "record_id STRING, user_id STRING, amount DOUBLE, event_time TIMESTAMP"
SEED = 16  # same seed, same records, same windows on every run
PARTS = {
    "a": (1, 12),
    "b": (13, 12),
    "c": (25, 4),
}  # file -> (first record, count): A, then B mid-crash, C later
WINDOW, WATERMARK = (
    "1 minute",
    "1 minute",
)  # records are out of order by at most 5 s: none is ever late
WAIT_FOR_KILL = {
    "processingTime": "1 hour"
}  # after batch 0 the child plans nothing more: new files stay unlogged
AVAILABLE_NOW = {"availableNow": True}


def read_records(spark, folder: Path) -> DataFrame:
    """The input files as a stream: a file source can replay, because its files stay where they are."""
    return spark.readStream.schema(SCHEMA).json(paths.uri(folder))


def write_part(where, part: str) -> None:
    """Write one input file atomically: the records of ``PARTS[part]``, from a fixed seed."""
    first, count = PARTS[part]
    records = crash.numbered_records(first, count, seed=SEED, base_time=config.BASE_EVENT_TIME)
    crash.write_records(where.input, f"part-{part}.json", records)


def build_window_counts(records: DataFrame, *keys: str) -> DataFrame:
    """Records and amounts per 1-minute event-time window (and per ``keys``): state that must survive a crash."""
    return (
        records.withWatermark("event_time", WATERMARK)
        .groupBy(F.window("event_time", WINDOW), *keys)
        .agg(F.count("*").alias("records"), F.round(F.sum("amount"), 2).alias("amount"))
        .select(F.col("window.start").alias("window_start"), *keys, "records", "amount")
    )


def write_events(batch: DataFrame, batch_id: int, where) -> None:
    """The foreachBatch function: each batch to a Delta table once, and to plain JSON files for contrast."""
    app_id = batch.sparkSession.sparkContext.getLocalProperty(
        "sql.streaming.queryId"
    )  # kept in the checkpoint
    batch.persist()
    # Delta commits (txnAppId, txnVersion) with the data: a replayed batch id is skipped, atomically.
    batch.write.format("delta").mode("append").option("txnAppId", app_id).option(
        "txnVersion", batch_id
    ).save(paths.uri(where.events))
    # A plain file append knows no batch id: a replayed batch adds its rows again.
    batch.write.mode("append").json(paths.uri(where.plain))
    batch.unpersist()


def write_windows(batch: DataFrame, batch_id: int, table: Path) -> None:
    """Replace the table with the batch (complete mode: the whole result), once per batch id."""
    app_id = batch.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")
    # Delta skips a replayed batch id without reading the batch; a stateful query whose batch was not
    # read in full fails (STATE_STORE_COMMIT_VALIDATION_FAILED). So read it all first, once.
    batch.persist().count()
    (
        batch.write.format("delta")
        .mode("overwrite")  # a reader sees the old result or the new one, never a mix
        .option("txnAppId", app_id)
        .option("txnVersion", batch_id)
        .save(paths.uri(table))
    )
    batch.unpersist()


def start_events(records: DataFrame, where, trigger: dict):
    """The events query; crash.pausable lets the lesson stop it before or after its sink."""
    write = crash.pausable(lambda batch, batch_id: write_events(batch, batch_id, where), "events")
    return (
        records.writeStream.foreachBatch(write)
        .option("checkpointLocation", paths.uri(where.checkpoints / "events"))
        .trigger(**trigger)
        .start()
    )


def start_windows(counts: DataFrame, table: Path, checkpoint: Path, trigger: dict = AVAILABLE_NOW):
    """The stateful query: complete mode, every batch's whole result into ``table``."""
    write = foreach_batch(
        crash.pausable(lambda batch, batch_id: write_windows(batch, batch_id, table), "windows")
    )
    return (
        counts.writeStream.outputMode("complete")
        .foreachBatch(write)
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .start()
    )


def start_both(spark, where, trigger: dict) -> list:
    """The child's two queries on one file source: events into Delta, window counts into Delta."""
    records = read_records(spark, where.input)
    counts = build_window_counts(records)
    return [
        start_events(records, where, trigger),
        start_windows(counts, where.windows, where.checkpoints / "windows", trigger),
    ]


def start_uninterrupted(spark, where):
    """The same windowed count on the same files, on a checkpoint of its own, never killed."""
    counts = build_window_counts(read_records(spark, where.input))
    return start_windows(
        counts, where.output / "windows_uninterrupted", where.checkpoints / "windows_uninterrupted"
    )


def start_by_user(spark, where, checkpoint: Path):
    """The changed query: counts per window AND user (another state key), into a table of its own."""
    counts = build_window_counts(read_records(spark, where.input), "user_id")
    return start_windows(counts, where.output / "windows_by_user", checkpoint)


def start_filtered(spark, where):
    """A change the checkpoint allows: a filter before the aggregation (state keys and values unchanged)."""
    records = read_records(spark, where.input).filter("amount > 0")
    return start_windows(build_window_counts(records), where.windows, where.checkpoints / "windows")


def start_lines(spark, server: crash.LineServer, seen: list, checkpoint: Path):
    """Lines from a TCP server, collected per batch: the source keeps no copy, only a count of lines received."""
    lines = (
        spark.readStream.format("socket").option("host", server.host).option("port", server.port)
    )
    return (
        lines.load()
        .writeStream.foreachBatch(
            lambda batch, i: seen.extend(row.value for row in batch.collect())
        )
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def read_ids(spark, where) -> tuple[list, list]:
    """The record ids the Delta table holds and those the plain JSON files hold, one per row."""
    delta = spark.read.format("delta").load(paths.uri(where.events)).select("record_id")
    plain = spark.read.schema(SCHEMA).json(paths.uri(where.plain)).select("record_id")
    return [row[0] for row in delta.collect()], [row[0] for row in plain.collect()]


def read_tallies(spark, where) -> tuple[crash.Tally, crash.Tally]:
    """Rows lost and duplicated in the Delta table and in the plain files, against the input files' ids."""
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


def run_folders(args) -> SimpleNamespace:
    """This run's folders: checkpoints and outputs (the input files, the tables, the child's logs)."""
    output, ckpt = paths.output_for(LESSON, "this-run"), checkpoint_root(LESSON, args) / "this-run"
    return SimpleNamespace(
        output=output,
        input=output / "input",
        events=output / "events",
        plain=output / "plain",
        windows=output / "windows",
        logs=output / "logs",
        checkpoints=ckpt,
    )


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, simulator=False)
    parser.add_argument(
        "--child", choices=("wait", "finish"), help=argparse.SUPPRESS
    )  # the process we kill
    args = parser.parse_args(argv)
    where = run_folders(args)
    if args.child:  # in the child: run both queries until killed ("wait") or done ("finish")
        with lesson_session(LESSON, args, delta=True) as spark:
            return finish(
                start_both(spark, where, WAIT_FOR_KILL if args.child == "wait" else AVAILABLE_NOW)
            )
    for folder in (where.output, where.checkpoints):  # only these this-run folders are ever deleted
        paths.remove_tree(folder, allow_outside=True)
    child = crash.ChildRuns.of_lesson(__file__, args, where.logs)  # runs this file with --child
    logs = lambda: crash.logged_batches_of(where.checkpoints, "events", "windows")  # noqa: E731
    with lesson_session(LESSON, args, delta=True) as spark:
        banner("1. Kill -9 twice in the middle of a batch, restart, count")
        write_part(where, "a")
        with child("1-wait", "--child", "wait") as process:
            process.wait_for_commit(0, where.checkpoints / "events", where.checkpoints / "windows")
            write_part(where, "b")  # new input, in no offsets file yet
            print(f"kill 1, before the offsets of part-b.json are written: {logs()}")
            process.kill()
        with child("2-after-sink", "--child", "finish", pause_at="after-sink:1") as process:
            process.wait_for_marker("after-sink", 1, "events", "windows")
            print(f"kill 2, after the sink wrote batch 1, before its commit: {logs()}")
            process.kill()
        finish(
            start_both(spark, where, AVAILABLE_NOW)
        )  # the restart, in this process: no kill this time
        print(
            "after the restart: {}\nDelta table (txnAppId/txnVersion): {}\nplain JSON files (no batch id):    {}".format(
                logs(), *read_tallies(spark, where)
            )
        )
        say("""Both 0 for Delta: the file source can replay, Spark logs a batch's offsets BEFORE
            it runs it, and the sink is idempotent. Kill 1 left part-b.json in no offsets file:
            the restart planned it as batch 1. Kill 2 left offsets/1 without commits/1: the
            restart ran batch 1 again, same id, same files; Delta found (query id, 1) in its log
            and skipped it, while the plain files got batch 1 twice.""")

        banner("2. The checkpoint folder, after the crashes")
        crash.print_checkpoint(where.checkpoints / "windows", "offsets/1", "commits/1")
        say("""A restart reads metadata (the query id), the last offsets file, the last commit.
            offsets/N without commits/N means batch N may be half written: it runs again with
            those offsets on the state/ of batch N-1. With both, batch N+1 starts after N.""")

        banner("3. The windowed count survived both kills")
        finish([start_uninterrupted(spark, where)])
        killed, whole = (
            read_windows(spark, where.windows),
            read_windows(spark, where.output / "windows_uninterrupted"),
        )
        narration.print_table(
            ("window_start", "records", "amount"), [(str(w)[11:16], r, a) for w, r, a in killed]
        )
        print(
            f"killed twice: {len(killed)} windows; uninterrupted run: {len(whole)} windows; equal: {killed == whole}"
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
        print(
            f"  a) a new checkpoint: all {sum(n for _, n in PARTS.values())} records read again, old state unused"
        )
        finish([start_filtered(spark, where)])
        print(
            "  b) a change the checkpoint allows, a filter before the aggregation: runs on, "
            f"now after batch {checkpoints.last_commit(where.checkpoints / 'windows')}"
        )

        banner("5. Socket input, for contrast: lines sent while the query was down are gone")
        crash.socket_gap(
            lambda *server_seen_checkpoint: start_lines(spark, *server_seen_checkpoint),
            where.checkpoints,
        )
        say("""A socket keeps no history; its offsets only count one connection's lines. On the
            old checkpoint that count restarts below the committed one and the query fails; on a
            new one it runs, but what was sent while no query listened is gone. Use files or Kafka.""")


if __name__ == "__main__":
    run_lesson(main)

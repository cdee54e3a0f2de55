"""03 · File streaming: watch a folder of JSON files, read each file once, quarantine bad lines.

What you'll learn
  - ``spark.readStream.schema(...).json(folder)`` turns a folder into a stream: every new
    file is new input. A stream needs its schema up front (you will see the error without).
  - ``maxFilesPerTrigger`` bounds how much one micro-batch reads; ``trigger(availableNow=True)``
    processes what is there now and stops.
  - The checkpoint (an option of the *writer*) remembers which files were read: run the
    lesson twice and the second run reads no old file.
  - Malformed lines are not dropped: PERMISSIVE mode puts them in ``_corrupt_record``, and
    the lesson writes them, with their file name, to a quarantine folder and counts them.

Run
  python streaming_tutorial/03_file_streaming.py                  # reads data/input_stream
  python streaming_tutorial/03_file_streaming.py                  # again: 0 old files re-read
  python streaming_tutorial/03_file_streaming.py --available-now  # process what is there, stop
  python streaming_tutorial/03_file_streaming.py --reset          # forget the checkpoint
  Files already there and no simulator running: it processes them and stops. No files: it
  starts the simulator for the run. To watch files arrive, start the simulator first in a
  second terminal; the lesson reads what it writes and stops when it stops (or after
  --duration seconds):
    python data_generators/simulate_file_data.py --count 10 --interval 3 --malformed-every 4
    python streaming_tutorial/03_file_streaming.py

What you'll see
  (first run on the sample data of initial_setup.py)
  Reading a stream without .schema() fails with:
    Schema must be specified when creating a streaming source DataFrame. If some files already exist in the direct...
  ...
  Batch 0 · transactions-0001.json: 10 rows parsed, 0 lines quarantined
  +--------------+---------+------+-----------+-------------------+
  |transaction_id|user_id  |amount|category   |timestamp          |
  +--------------+---------+------+-----------+-------------------+
  |TXN-000001    |USER-1016|551.04|Electronics|2025-01-15 10:30:01|
  |TXN-000002    |USER-1015|355.95|Home       |2025-01-15 10:30:03|
  ...
  Batch 2 · transactions-0003.json: 8 rows parsed, 2 lines quarantined
  ...
  Already processed by earlier runs (the checkpoint's list): 0 file(s)
  Read in this run: 3 file(s): transactions-0001.json, transactions-0002.json, transactions-0003.json
  Old files read again: 0
  Rows parsed: 28; malformed lines quarantined: 2 (output/03_file_streaming/quarantine)
    transactions-0003.json: {"transaction_id":"TXN-000025","user_id":"USER-1015","amount":644.
    transactions-0003.json: {"transaction_id":"TXN-000030","user_id":"USER-1038","amount":3
  And on the second run:
  Already processed by earlier runs (the checkpoint's list): 3 file(s)
  Read in this run: 0 file(s)
  Old files read again: 0
"""

from __future__ import annotations

import json
import time
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from pyspark.errors import IllegalArgumentException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from common import cli, paths, simulators
from common.runner import (
    await_queries,
    banner,
    checkpoint_root,
    foreach_batch,
    lesson_session,
    run_lesson,
    say,
    stop_between_batches,
)
from common.schemas import TRANSACTION_SCHEMA

LESSON = "03_file_streaming"
# An upper bound: the lesson stops as soon as its input is done (see watch_until_done).
DEFAULT_DURATION = 60
POLL_SECONDS = 0.5  # how often a watching run checks whether its input is done
MAX_FILES_PER_TRIGGER = 1  # one file per micro-batch, so each batch is easy to follow
TRIGGER_INTERVAL = "2 seconds"  # how often a watching query lists the folder
SHOW_ROWS = 5  # rows of each batch printed
# The simulator the lesson starts when the folder is empty: a few files, some lines broken.
SIMULATOR_ARGS = ["--count", "3", "--interval", "3", "--malformed-every", "4"]
CORRUPT_COLUMN = "_corrupt_record"
# The transaction schema plus a column where PERMISSIVE mode keeps lines it cannot parse.
RAW_SCHEMA = StructType(TRANSACTION_SCHEMA.fields + [StructField(CORRUPT_COLUMN, StringType())])


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True).parse_args(argv)
    folder = paths.TRANSACTIONS_DIR
    paths.ensure_dirs(folder)
    with lesson_session(LESSON, args) as spark:
        checkpoint = checkpoint_root(LESSON, args) / "transactions"
        quarantine = paths.output_for(LESSON, "quarantine")

        banner("1. A folder of JSON files, read with a fixed schema")
        files = input_files(folder)
        print(f"{paths.display(folder)} holds {len(files)} file(s) now.")
        explain_missing_schema(spark, folder)
        transactions = read_transactions(spark, folder)
        transactions.printSchema()
        say(f"""maxFilesPerTrigger={MAX_FILES_PER_TRIGGER}: each micro-batch reads at most that many
            new files. The checkpoint ({paths.display(checkpoint)}) is set on the writer,
            writeStream.option("checkpointLocation", ...): it records every file read, so a
            restarted query skips them. Set on readStream, the same option is silently
            ignored and every run would read every file again.""")

        run = FileRun(checkpoint, quarantine)
        # Watch the folder when files are (about to be) arriving; otherwise read what is
        # there and stop, so the lesson ends as soon as its input is done.
        watch = not args.available_now and (simulators.is_running("transactions") or not files)
        if watch:
            banner(f"2. Watching the folder (at most {args.duration:g} s): one new file per micro-batch")
            query = start_file_stream(transactions, run, checkpoint, available_now=False)
            external = simulators.is_running("transactions")
            with simulators.simulator_for_lesson(
                "transactions", "simulate_file_data.py", SIMULATOR_ARGS, enabled=not args.no_simulator
            ) as simulator:
                watch_until_done(query, run, folder, args.duration, simulator=simulator, external=external)
        else:
            banner("2. Reading the files that are there, one per micro-batch, then stopping")
            query = start_file_stream(transactions, run, checkpoint, available_now=True)
            await_queries([query], args.duration)

        banner("3. What this run did")
        report(run, folder)


def read_transactions(spark, folder: Path) -> DataFrame:
    """The folder as a stream of transactions, plus the raw line of any malformed record.

    PERMISSIVE mode never fails the query on a bad line: the line goes to
    ``_corrupt_record`` and the other columns are null (FAILFAST would stop the stream
    on the first bad line; DROPMALFORMED would lose it silently).
    """
    # Note: no checkpointLocation here. It is an option of writeStream; on the reader
    # Spark silently ignores it, and a restarted query would read every file again.
    return (
        spark.readStream.schema(RAW_SCHEMA)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
        .option("maxFilesPerTrigger", MAX_FILES_PER_TRIGGER)
        .json(str(folder))
        # _metadata is the hidden per-file column of file sources: which file each row came from.
        .withColumn("source_file", F.col("_metadata.file_name"))
    )


def build_parsed_transactions(raw: DataFrame) -> DataFrame:
    """The rows that parsed: the transaction's columns and the file they came from."""
    return raw.filter(F.col(CORRUPT_COLUMN).isNull()).select(*TRANSACTION_SCHEMA.fieldNames(), "source_file")


def build_quarantine(raw: DataFrame) -> DataFrame:
    """The lines that did not parse, exactly as they were in the file, with the file's name.

    Use it on a persisted micro-batch (as FileRun does), not on the raw stream: Spark
    refuses a query on raw JSON that needs only the corrupt-record column
    (UNSUPPORTED_FEATURE.QUERY_ONLY_CORRUPT_RECORD_COLUMN), because it would skip
    parsing the very columns whose failure fills it.
    """
    return raw.filter(F.col(CORRUPT_COLUMN).isNotNull()).select(
        F.col(CORRUPT_COLUMN).alias("raw_line"), "source_file"
    )


class FileRun:
    """One run of the file stream: the foreachBatch handler and what it saw.

    foreachBatch hands each micro-batch over as a plain DataFrame, so one read of each
    file feeds two outputs (parsed rows to the console, bad lines to the quarantine
    folder) and can be counted. Lesson 04 shows the other way: one query per sink.
    """

    def __init__(self, checkpoint: Path, quarantine: Path, *, show_rows: int = SHOW_ROWS) -> None:
        self.quarantine = quarantine
        self.show_rows = show_rows
        self.files_before = processed_files(checkpoint)  # read by earlier runs
        self.files_read: list[str] = []  # read by this run, in order
        self.parsed = 0
        self.quarantined: list[dict] = []  # this run's bad lines: raw_line, source_file

    @property
    def reread(self) -> list[str]:
        """Files this run read although an earlier run had already processed them."""
        return [name for name in self.files_read if name in self.files_before]

    def handle_batch(self, batch: DataFrame, batch_id: int) -> None:
        # The batch is used four times below; persisting it reads its files only once,
        # and lets build_quarantine select the corrupt-record column on its own.
        batch.persist()
        try:
            per_file = (
                batch.groupBy("source_file")
                .agg(F.count(F.lit(1)).alias("lines"), F.count(CORRUPT_COLUMN).alias("bad"))
                .orderBy("source_file")
                .collect()
            )
            bad_lines = [row.asDict() for row in build_quarantine(batch).collect()]
            if bad_lines:
                # One folder per batch id, overwritten if the batch is ever replayed after a
                # crash: the quarantine then holds each bad line once (idempotent write).
                build_quarantine(batch).coalesce(1).write.mode("overwrite").json(
                    str(self.quarantine / f"batch_id={batch_id}")
                )
            parsed = sum(row.lines - row.bad for row in per_file)
            names = ", ".join(row.source_file for row in per_file)
            print(f"\nBatch {batch_id} · {names}: {parsed} rows parsed, {len(bad_lines)} lines quarantined")
            build_parsed_transactions(batch).drop("source_file").orderBy("transaction_id").show(
                self.show_rows, truncate=False
            )
            self.files_read.extend(row.source_file for row in per_file)
            self.parsed += parsed
            self.quarantined.extend(bad_lines)
        finally:
            batch.unpersist()


def start_file_stream(transactions: DataFrame, run: FileRun, checkpoint: Path, *, available_now: bool):
    """Start the query; the checkpoint is where it records every file it has read."""
    writer = (
        # foreach_batch (common.runner) lets a stop that lands mid-batch end quietly.
        transactions.writeStream.foreachBatch(foreach_batch(run.handle_batch))
        .option("checkpointLocation", str(checkpoint))
        .queryName("transactions_from_files")
    )
    if available_now:
        return writer.trigger(availableNow=True).start()
    return writer.trigger(processingTime=TRIGGER_INTERVAL).start()


def watch_until_done(query, run: FileRun, folder: Path, duration: float, *, simulator=None, external=False) -> None:
    """Let the query watch the folder until the simulator is done and all its files are read.

    Ends early only when the input is known to be finite: the simulator this lesson
    started has exited (or the one in the second terminal has stopped) and every file in
    the folder has been read. Otherwise it watches for ``duration`` seconds.
    """
    deadline = time.monotonic() + duration
    try:
        while time.monotonic() < deadline:
            if query.awaitTermination(POLL_SECONDS):  # raises if the query failed
                break
            if simulator is not None:
                producing = simulator.poll() is None
            elif external:
                producing = simulators.is_running("transactions")
            else:  # --no-simulator: we cannot know when more files come
                continue
            if not producing and set(input_files(folder)) <= run.files_before | set(run.files_read):
                break
    finally:
        stop_between_batches(query)
    if query.exception() is not None:
        raise query.exception()


def process_available(spark, folder: Path, checkpoint: Path, quarantine: Path, *, timeout: float = 120) -> FileRun:
    """Read the files in ``folder`` that ``checkpoint`` has not seen yet, then stop."""
    run = FileRun(checkpoint, quarantine)
    query = start_file_stream(read_transactions(spark, folder), run, checkpoint, available_now=True)
    await_queries([query], timeout)
    return run


def processed_files(checkpoint: Path) -> set[str]:
    """Names of the files the checkpoint says its file source has already read.

    The file source logs each file it reads under ``<checkpoint>/sources/0/``: one
    file per batch, a version line ("v1") and then one JSON object per input file.
    It is an internal format, read here only to show what the checkpoint remembers.
    """
    names = set()
    for log in sorted((checkpoint / "sources").glob("*/*")):
        if log.name.startswith("."):  # .crc checksums
            continue
        for line in log.read_text(encoding="utf-8").splitlines():
            if line.startswith("{"):
                names.add(PurePosixPath(unquote(urlparse(json.loads(line)["path"]).path)).name)
    return names


def input_files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob("*.json"))


def explain_missing_schema(spark, folder: Path) -> str:
    """Try to read the folder as a stream without a schema; returns Spark's message."""
    try:
        spark.readStream.json(str(folder))
    except IllegalArgumentException as error:
        message = str(error).strip().splitlines()[0]
        print(f"Reading a stream without .schema() fails with:\n  {message[:110]}...")
        say("""A stream starts before its data exists: the folder may still be empty, and
            every file must be read the same way as the first. So a file stream takes its
            schema up front instead of guessing it from whatever happens to be there.
            A line that does not fit the schema then becomes a corrupt record instead of
            changing the table's columns.""")
        return message
    raise AssertionError("a streaming JSON source without a schema unexpectedly worked")


def report(run: FileRun, folder: Path) -> None:
    print(f"Files in {paths.display(folder)}: {len(input_files(folder))}")
    print(f"Already processed by earlier runs (the checkpoint's list): {len(run.files_before)} file(s)")
    names = f": {', '.join(run.files_read)}" if run.files_read else ""
    print(f"Read in this run: {len(run.files_read)} file(s){names}")
    print(f"Old files read again: {len(run.reread)}")
    print(f"Rows parsed: {run.parsed}; malformed lines quarantined: {len(run.quarantined)} "
          f"({paths.display(run.quarantine)})")
    for line in run.quarantined:
        print(f"  {line['source_file']}: {line['raw_line']}")
    say("""Run the lesson again: the checkpoint lists every file already read, so the
        next run reads only files that arrived since (add some with the simulator).
        --reset deletes the checkpoint and the quarantine, and the next run reads
        everything again.""")


if __name__ == "__main__":
    run_lesson(main)

"""03 · File streaming: watch a folder of JSON files, read each file once, quarantine bad lines.

What you'll learn
  - A folder is a stream: every new file is new input. A stream needs its schema up front
    (you will see the error without one), and each line is parsed against it.
  - ``maxFilesPerTrigger`` bounds how much one micro-batch reads; ``trigger(availableNow=True)``
    processes what is there now and stops.
  - The checkpoint (an option of the *writer*) remembers which files were read: run the
    lesson twice and the second run reads no old file.
  - A line that cannot be used is not dropped: it goes, with its file name and the reason,
    to a quarantine folder, and is counted.

Run
  python streaming_tutorial/03_file_streaming.py                  # reads data/input_stream
  python streaming_tutorial/03_file_streaming.py                  # again: 0 old files re-read
  python streaming_tutorial/03_file_streaming.py --available-now  # process what is there, stop
  python streaming_tutorial/03_file_streaming.py --reset          # forget the checkpoint
  Files already there and no simulator running: it processes them and stops. No files: it
  starts the simulator for the run. To watch files arrive, start the simulator first in a
  second terminal; the lesson reads what it writes and stops when it stops (or after
  --duration seconds, 20 by default):
    python data_generators/simulate_file_data.py --count 10 --interval 3 --malformed-every 4
    python streaming_tutorial/03_file_streaming.py --duration 60

What you'll see
  (first run on the sample data of initial_setup.py)
  Reading a stream without .schema() fails:
    Schema must be specified when creating a streaming source DataFrame. If some files already exist in the ...
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
    quarantined, not a JSON object: {"transaction_id":"TXN-000025","user_id":"USER-1015","amount":644.
    quarantined, not a JSON object: {"transaction_id":"TXN-000030","user_id":"USER-1038","amount":3
  ...
  Already read by earlier runs (the checkpoint's list): 0 file(s)
  Read in this run: 3 file(s): transactions-0001.json, transactions-0002.json, transactions-0003.json
  Old files read again: 0
  Rows parsed: 28; lines quarantined: 2 (with their reason, in output/03_file_streaming/quarantine)
  And on the second run:
  Already read by earlier runs (the checkpoint's list): 3 file(s)
  Read in this run: 0 file(s)
  Old files read again: 0
"""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import parsing, paths
from common.schemas import TRANSACTION_SCHEMA
from infra import cli, simulators
from infra.runner import (
    banner,
    checkpoint_root,
    foreach_batch,
    lesson_session,
    run_lesson,
    run_queries,
    say,
)
from teaching import checkpoints, demos, narration

LESSON = "03_file_streaming"
MAX_FILES_PER_TRIGGER = 1  # one file per micro-batch, so each batch is easy to follow
TRIGGER_INTERVAL = "2 seconds"  # how often a watching query lists the folder
# The simulator the lesson starts when the folder is empty: a few files, every 4th line broken.
SIMULATOR = (
    "transactions",
    "simulate_file_data.py",
    ["--count", "3", "--interval", "3", "--malformed-every", "4"],
)


def read_transactions(spark, folder: Path) -> DataFrame:
    """Every line of every file in ``folder`` as text (``value``), with its file's name (``source_file``)."""
    # Text first, parsed next: a line that does not fit the schema is kept, never lost.
    return parsing.read_json_lines(spark, folder, max_files_per_trigger=MAX_FILES_PER_TRIGGER)


def parse_transactions(lines: DataFrame) -> DataFrame:
    """The transaction's fields, parsed from each line, and why the line cannot be used (null when it can)."""
    # from_json never fails the query: a broken line, a wrong type, a missing required field
    # (nullable=False in the schema), an amount of 1e400 (Infinity) or below 0 (the schema's
    # range), or bad UTF-8: each gets a quarantine_reason.
    return parsing.parse_json(lines, TRANSACTION_SCHEMA)


def write_batch(batch: DataFrame, batch_id: int, quarantine: Path, tally: dict) -> None:
    """One micro-batch: its good rows to the console, its bad lines (with their reason) to the quarantine."""
    # foreachBatch hands over each micro-batch as a plain DataFrame: one read of the files
    # feeds both outputs. persist() keeps it in memory for the uses below.
    batch.persist()
    try:
        per_file = (
            batch.groupBy("source_file")
            .agg(F.count(F.lit(1)).alias("lines"), F.count(parsing.REASON_COLUMN).alias("bad"))
            .orderBy("source_file")
            .collect()
        )
        good, bad = (
            parsing.valid_records(batch, TRANSACTION_SCHEMA),
            parsing.quarantined(batch, "source_file"),
        )
        bad_rows = bad.collect()
        if bad_rows:
            write_quarantine(bad, quarantine, batch_id)
        # An empty file is a micro-batch too, with no lines.
        counts = [
            f"{f.source_file}: {f.lines - f.bad} rows parsed, {f.bad} lines quarantined"
            for f in per_file
        ]
        print(f"\nBatch {batch_id} · {', '.join(counts) or 'a file with no lines'}")
        if sum(f.lines - f.bad for f in per_file):
            good.orderBy("transaction_id").show(truncate=False)
        for row in bad_rows:
            print(f"  quarantined, {row.reason}: {narration.first_line(row.raw_line)}")
        tally["files"] += [f.source_file for f in per_file]
        tally["parsed"] += sum(f.lines - f.bad for f in per_file)
        tally["quarantined"] += len(bad_rows)
    finally:
        batch.unpersist()


def write_quarantine(bad: DataFrame, quarantine: Path, batch_id: int) -> None:
    """A batch's bad lines, each with its file and reason, as JSON in quarantine/batch_id=N/."""
    # One folder per batch id, overwritten if the batch runs again after a crash: each bad line once.
    bad.coalesce(1).write.mode("overwrite").json(paths.uri(quarantine / f"batch_id={batch_id}"))


def start_transactions(
    transactions: DataFrame, checkpoint: Path, trigger: dict, quarantine: Path, tally: dict
):
    """Start the query; its checkpoint is where it records every file it has read."""
    # checkpointLocation is an option of the *writer*. Set on readStream, Spark silently
    # ignores it, and every run would read every file again.
    return (
        transactions.writeStream.foreachBatch(
            foreach_batch(lambda batch, batch_id: write_batch(batch, batch_id, quarantine, tally))
        )
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .queryName("transactions_from_files")
        .start()
    )


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, available_now=True).parse_args(argv)
    folder, quarantine = paths.TRANSACTIONS_DIR, paths.output_for(LESSON, "quarantine")
    with lesson_session(LESSON, args) as spark:
        checkpoint = checkpoint_root(LESSON, args) / "transactions"
        banner("1. A folder of JSON files, read with a fixed schema")
        transactions = parse_transactions(
            read_transactions(spark, folder)
        )  # (creates the folder if missing)
        demos.show_refusal(
            lambda: spark.readStream.json(paths.uri(folder)), "Reading a stream without .schema()"
        )
        say("""A stream starts before its data exists: the folder may still be empty, and
            every file must be read the same way as the first. So a file stream takes its
            schema up front instead of guessing it. This lesson reads each line as text and
            parses it against TRANSACTION_SCHEMA: a line that does not fit is kept, with the
            reason, instead of stopping the query or vanishing.""")
        say(f"""maxFilesPerTrigger={MAX_FILES_PER_TRIGGER}: each micro-batch reads at most that
            many new files. The checkpoint ({paths.display(checkpoint)}) records every file
            read, so a restarted query skips them.""")

        files_before, tally = (
            checkpoints.source_files(checkpoint, committed_only=True),
            {"files": [], "parsed": 0, "quarantined": 0},
        )
        with simulators.file_input_for_lesson(*SIMULATOR, folder, args) as files:
            banner(
                f"2. {'Watching' if files.watching else 'Reading'} {paths.display(folder)}, a file per micro-batch"
            )
            query = start_transactions(
                transactions, checkpoint, files.trigger(TRIGGER_INTERVAL), quarantine, tally
            )
            run_queries([query], args, until=files.done)

        banner("3. What this run did")
        read_now = sorted(checkpoints.source_files(checkpoint, committed_only=True) - files_before)
        print(f"Already read by earlier runs (the checkpoint's list): {len(files_before)} file(s)")
        print(
            f"Read in this run: {len(read_now)} file(s)"
            + (f": {', '.join(read_now)}" if read_now else "")
        )
        print(f"Old files read again: {len(set(tally['files']) & files_before)}")
        print(
            f"Rows parsed: {tally['parsed']}; lines quarantined: {tally['quarantined']} "
            f"(with their reason, in {paths.display(quarantine)})"
        )
        say("""Run the lesson again: the checkpoint lists every file already read, so the
            next run reads only files that arrived since (add some with the simulator).
            --reset deletes the checkpoint and the quarantine, and the next run reads
            everything again.""")


if __name__ == "__main__":
    run_lesson(main)

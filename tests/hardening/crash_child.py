"""The child test_kill_cycles.py kills: one file input streamed into Delta, SQLite and a file sink.

    python tests/hardening/crash_child.py --root <folder> wait    # run until killed (kill cycles)
    python tests/hardening/crash_child.py --root <folder> finish  # read what is there, then stop

Two queries on the same input folder, each with its own checkpoint under ``<root>/checkpoints``:

- ``batches``: foreachBatch, each micro-batch into a Delta table (``txnAppId``/``txnVersion``, as
  lesson 16) and then into a database table (lesson 10's ``apply_batch_once``, its guard: the batch
  id is claimed in the same transaction as the rows). Each write is ``crash.pausable``, labelled
  "delta" and "database", so the parent can stop the child before Delta, between the two, or after
  both.
- ``files``: the file sink (JSON), which makes a batch visible through its ``_spark_metadata`` log.

One input file per micro-batch (maxFilesPerTrigger 1): a kill cycle's new files are several batches,
so a kill can land on any of them. The test imports this module for the final clean run in its own
session (the same queries on the same checkpoints) and for the folder layout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "streaming_tutorial")]

import lesson16_crash_harness as crash  # noqa: E402

from common import database, paths  # noqa: E402
from common.batch_ids import query_id  # noqa: E402
from infra.runner import finish, foreach_batch, raise_failure  # noqa: E402

# Lesson 10 teaches the idempotent database write this child uses (a test may load a lesson).
LESSON_10 = paths.import_lesson("10_foreach_batch")
SCHEMA = "record_id STRING, user_id STRING, amount DOUBLE, event_time TIMESTAMP"
FILES_PER_BATCH = 1  # one batch per input file: more batches, more places for a kill to land
WAIT_TRIGGER = {
    "processingTime": "500 milliseconds"
}  # "wait": new batches as files come, until killed
RECORDS_TABLE = """CREATE TABLE IF NOT EXISTS crash_records (
    record_id VARCHAR(16) NOT NULL, batch_id BIGINT NOT NULL)"""  # no key: a second copy would show
ADD_RECORD = "INSERT INTO crash_records (record_id, batch_id) VALUES (?, ?)"
STARTED = "crash child: queries started"  # the parent times its random delays from this line


def folders(root: Path) -> SimpleNamespace:
    """The input, the three sinks and the checkpoints under ``root``."""
    return SimpleNamespace(
        input=root / "input",
        delta=root / "delta",
        files=root / "files",
        jdbc=database.Jdbc(f"jdbc:sqlite:{root / 'records.db'}"),
        checkpoints=root / "checkpoints",
    )


def read_records(spark, where):
    return (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", FILES_PER_BATCH)
        .json(str(where.input))
    )


def write_delta(batch, batch_id: int, where) -> None:
    """Append once per (query id, batch id): Delta skips a txnVersion it has committed for this app
    id."""
    app_id = query_id(batch)
    batch.write.format("delta").mode("append").option("txnAppId", app_id).option(
        "txnVersion", batch_id
    ).save(str(where.delta))


def write_database(batch, batch_id: int, where) -> None:
    """One row per record, in one transaction with the claim of the batch id: a replay changes
    nothing."""
    app_id = query_id(batch)
    rows = [(row.record_id, batch_id) for row in batch.select("record_id").collect()]
    LESSON_10.apply_batch_once(
        batch.sparkSession, where.jdbc, app_id, batch_id, ADD_RECORD, rows, input_rows=len(rows)
    )


def start_all(spark, where, trigger: dict) -> list:
    """The two queries: foreachBatch into Delta then the database, and the file sink."""
    database.create_tables(spark, where.jdbc, [LESSON_10.APPLIED_BATCHES, RECORDS_TABLE])
    to_delta = crash.pausable(lambda batch, batch_id: write_delta(batch, batch_id, where), "delta")
    to_database = crash.pausable(
        lambda batch, batch_id: write_database(batch, batch_id, where), "database"
    )

    def write_batch(batch, batch_id: int) -> None:
        batch.persist()
        to_delta(batch, batch_id)
        to_database(batch, batch_id)
        batch.unpersist()

    batches = (
        read_records(spark, where)
        .writeStream.foreachBatch(foreach_batch(write_batch))
        .option("checkpointLocation", str(where.checkpoints / "batches"))
        .trigger(**trigger)
        .start()
    )
    files = (
        read_records(spark, where)
        .writeStream.format("json")
        .option("path", str(where.files))
        .option("checkpointLocation", str(where.checkpoints / "files"))
        .trigger(**trigger)
        .start()
    )
    return [batches, files]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root", type=Path, required=True, help="the folder of the input, sinks and checkpoints"
    )
    parser.add_argument("mode", choices=("wait", "finish"))
    args = parser.parse_args(argv)
    from common.session import get_spark

    spark = get_spark("crash-child", master="local[2]", delta=True, jdbc=True, ui=False)
    queries = start_all(
        spark, folders(args.root), WAIT_TRIGGER if args.mode == "wait" else {"availableNow": True}
    )
    print(STARTED, flush=True)
    if args.mode == "finish":
        finish(queries)
    # until the parent kills the process group; a query that fails ends the child, with its error
    else:
        spark.streams.awaitAnyTermination()
        raise_failure(queries)
    spark.stop()


if __name__ == "__main__":
    main()

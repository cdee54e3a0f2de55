"""12 · Arbitrary stateful processing: your own per-user state with applyInPandasWithState.

What you'll learn
  - ``groupBy(key).applyInPandasWithState(func, output_schema, state_schema, "update",
    GroupStateTimeout.EventTimeTimeout)``: Spark calls ``func`` once per user per
    micro-batch with that user's new rows (as pandas DataFrames) and a ``GroupState``.
  - The ``GroupState`` API: ``state.exists`` / ``state.get`` read what you kept last time,
    ``state.update(tuple)`` keeps it for the next batch, ``state.remove()`` forgets it,
    ``state.setTimeoutTimestamp(ms)`` asks to be called again when the watermark passes.
  - An event-time timeout closes idle users: once the watermark is past a user's last
    event + IDLE_TIMEOUT, Spark calls ``func`` with no rows and ``state.hasTimedOut``;
    the lesson emits a final "closed" row and removes the state.
  - Such a timeout often fires in a batch *without* new data for that user, or with no
    data at all: a no-data batch that only moves the watermark.
  - Not the seeds' ``mapGroupsWithState`` with a Python ``GroupState``: that API exists
    only in Scala and Java; in PySpark ``df.groupBy(...).mapGroupsWithState`` is an
    AttributeError. Python uses applyInPandasWithState (or, newer, transformWithStateInPandas).

Run
  python streaming_tutorial/12_stateful_processing.py                  # the files in data/ecommerce_events
  python streaming_tutorial/12_stateful_processing.py --reset          # forget the state, read them again
  Files already there and no simulator running: it reads them (like --available-now) and
  stops. No files: it starts the shop simulator (4 files, one every 3 s) and stops once they
  are read; --duration (default 60 s) is only an upper bound. The state lives in the
  checkpoint, so a second run continues every open user. To run the simulator yourself,
  start it first in a second terminal:
    python data_generators/generate_ecommerce_events.py --count 4 --interval 3 --base-time 2025-01-15T10:30:00Z
    python streaming_tutorial/12_stateful_processing.py

What you'll see
  (a run on an empty folder, which starts the simulator; which file lands in which batch
  varies with timing)
  grouped.mapGroupsWithState exists in PySpark: False
  ...
  Batch: 2
  +---------+------+------+---------+-----------+-------------------+
  |user_id  |status|events|purchases|total_spent|last_seen          |
  +---------+------+------+---------+-----------+-------------------+
  |USER-2020|active|3     |0        |0.0        |2025-01-15 10:32:30|
  |USER-2011|active|6     |1        |749.97     |2025-01-15 10:32:23|
  ...
  |USER-2022|closed|4     |0        |0.0        |2025-01-15 10:30:33|
  +---------+------+------+---------+-----------+-------------------+
  ...
  Batch: 4
  +---------+------+------+---------+-----------+-------------------+
  |USER-2036|closed|4     |1        |179.98     |2025-01-15 10:31:51|
  |USER-2019|closed|2     |0        |0.0        |2025-01-15 10:31:41|
  |USER-2023|closed|3     |0        |0.0        |2025-01-15 10:31:34|
  +---------+------+------+---------+-----------+-------------------+
  After 5 micro-batches the state store keeps 11 open users; 9 were closed
  by the timeout and removed. ...
  (Batch 4 read no file: a no-data batch that only moved the watermark closed them.)
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Iterator

import pandas as pd
from pyspark import cloudpickle
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, GroupedData
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType, TimestampType

from common import cli, paths, simulators
from common.runner import (
    await_queries,
    banner,
    checkpoint_root,
    lesson_session,
    run_lesson,
    say,
    stop_between_batches,
)
from common.schemas import ECOMMERCE_EVENT_SCHEMA

LESSON = "12_stateful_processing"
# An upper bound: the lesson stops once the simulator is done and its files are read.
DEFAULT_DURATION = 60
POLL_SECONDS = 0.5
MAX_FILES_PER_TRIGGER = 1  # one file per micro-batch, so state visibly grows batch by batch
TRIGGER_INTERVAL = "2 seconds"
WATERMARK_DELAY = "10 seconds"  # how late an event may be and still count
IDLE_TIMEOUT = timedelta(minutes=1)  # a user with no event for this long (event time) is closed
# The simulator the lesson starts when the folder is empty: a fixed base time, so the run
# shows the same users (and the same closed sessions) as the docstring.
SIMULATOR_ARGS = ["--count", "4", "--interval", "3", "--base-time", "2025-01-15T10:30:00Z"]

# What func returns: one row per user per batch in which something happened to the user.
OUTPUT_SCHEMA = StructType(
    [
        StructField("user_id", StringType()),
        StructField("status", StringType()),  # active: had events this batch | closed: timed out
        StructField("events", LongType()),
        StructField("purchases", LongType()),
        StructField("total_spent", DoubleType()),
        StructField("last_seen", TimestampType()),
    ]
)
# What Spark keeps per user between batches (in the checkpoint's state store).
STATE_SCHEMA = StructType(
    [
        StructField("events", LongType()),
        StructField("purchases", LongType()),
        StructField("total_spent", DoubleType()),
        StructField("last_seen_ms", LongType()),  # epoch milliseconds, what the timeout API uses
    ]
)


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True).parse_args(argv)
    folder = paths.ECOMMERCE_DIR
    paths.ensure_dirs(folder)
    # PySpark 4.2's own applyInPandasWithState code pads its batches with empty pandas
    # frames, which pandas 2.3 answers with a FutureWarning per batch from every Python
    # worker: noise that is not about the lesson. (Workers inherit the environment.)
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")
    with lesson_session(LESSON, args) as spark:
        banner("1. mapGroupsWithState is Scala/Java only")
        explain_missing_map_groups_with_state(spark)

        # Watch the folder when files are (about to be) arriving; otherwise read what is
        # there and stop. (The same decision as lesson 04: the simulator starts only for an
        # empty folder, so the sample data later lessons read stays as initial_setup.py wrote it.)
        watch = not args.available_now and (simulators.is_running("ecommerce") or not any(folder.glob("*.json")))
        trigger = {"processingTime": TRIGGER_INTERVAL} if watch else {"availableNow": True}
        banner(f"2. Per-user state; a user idle for {IDLE_TIMEOUT.seconds // 60} min of event time is closed")
        query = start_console(build_user_state(read_events(spark, folder)), checkpoint_root(LESSON, args), trigger)
        if watch:
            external = simulators.is_running("ecommerce")
            with simulators.simulator_for_lesson(
                "ecommerce", "generate_ecommerce_events.py", SIMULATOR_ARGS, enabled=not args.no_simulator
            ) as simulator:
                run_until_input_done(query, args.duration, input_done=simulator_done(simulator, external))
        else:
            await_queries([query], args.duration)  # availableNow: ends when the files are read
        report_state(query)
        report_left_out(spark, folder)


def read_events(spark, folder: Path) -> DataFrame:
    """The folder of shop-event files as a stream, one file per micro-batch."""
    return (
        spark.readStream.schema(ECOMMERCE_EVENT_SCHEMA)
        .option("maxFilesPerTrigger", MAX_FILES_PER_TRIGGER)
        .json(str(folder))
    )


def build_user_state(
    events: DataFrame, *, idle_timeout: timedelta = IDLE_TIMEOUT, watermark_delay: str = WATERMARK_DELAY
) -> DataFrame:
    """Running totals per user: one "active" row per user per batch with events, and one
    final "closed" row once the user has been idle for ``idle_timeout`` of event time."""
    ship_code_by_value()
    return (
        # State needs a key and a time: a malformed line (all nulls; lesson 03 shows how to
        # quarantine those) cannot belong to a user, so it is left out here.
        events.where(F.col("user_id").isNotNull() & F.col("timestamp").isNotNull())
        # The watermark drives the event-time timeout; without one, EventTimeTimeout fails
        # at start. Rows older than the watermark are dropped before func sees them.
        .withWatermark("timestamp", watermark_delay)
        .groupBy("user_id")
        .applyInPandasWithState(
            functools.partial(update_user_state, idle_timeout_ms=int(idle_timeout.total_seconds() * 1000)),
            outputStructType=OUTPUT_SCHEMA,
            stateStructType=STATE_SCHEMA,
            # update: a row per call, not a final result; append would also work here.
            outputMode="update",
            timeoutConf=GroupStateTimeout.EventTimeTimeout,
        )
    )


def update_user_state(
    key: tuple, batches: Iterator[pd.DataFrame], state: GroupState, *, idle_timeout_ms: int
) -> Iterator[pd.DataFrame]:
    """Called by Spark once per user per micro-batch: fold the user's new rows into the state.

    ``key`` is the tuple of grouping values, ``batches`` yields this user's new rows as
    pandas DataFrames (nothing when the call is a timeout), ``state`` is the GroupState.
    """
    (user_id,) = key
    if state.hasTimedOut:
        # Called with no rows because the watermark passed the timeout we set: say goodbye
        # and forget the user, or the state store would keep every user ever seen.
        events, purchases, spent, last_seen_ms = state.get
        state.remove()
        yield summary(user_id, "closed", events, purchases, spent, last_seen_ms)
        return

    # state.get (a tuple in STATE_SCHEMA's order) raises when there is no state yet.
    events, purchases, spent, last_seen_ms = state.get if state.exists else (0, 0, 0.0, 0)
    for rows in batches:
        bought = rows[rows["event_type"] == "purchase"]
        events += len(rows)
        purchases += len(bought)
        spent += float((bought["price"] * bought["quantity"]).sum())
        # Timestamps arrive as naive pandas times in the session time zone (UTC here), so
        # .value is nanoseconds since the epoch.
        last_seen_ms = max(last_seen_ms, rows["timestamp"].max().value // 1_000_000)
    spent = round(spent, 2)
    state.update((events, purchases, spent, last_seen_ms))
    # Call me again when the watermark passes last_seen + idle_timeout; every new event moves
    # it on. (setTimeoutTimestamp refuses a time behind the watermark; rows that old were dropped.)
    state.setTimeoutTimestamp(last_seen_ms + idle_timeout_ms)
    yield summary(user_id, "active", events, purchases, spent, last_seen_ms)


def summary(user_id: str, status: str, events: int, purchases: int, spent: float, last_seen_ms: int) -> pd.DataFrame:
    """One output row in OUTPUT_SCHEMA's column order."""
    return pd.DataFrame(
        {
            "user_id": [user_id],
            "status": [status],
            "events": [events],
            "purchases": [purchases],
            "total_spent": [spent],
            "last_seen": [pd.Timestamp(last_seen_ms, unit="ms")],
        }
    )


def ship_code_by_value() -> None:
    """Let Spark's Python workers run update_user_state when this file was imported, not run.

    Spark pickles func to send it to the workers. A function of an imported module is
    pickled as "module name + function name", and a worker cannot import a lesson
    (``12_...`` is not a module name). Run as a script (__main__), or registered like
    this, the code itself travels with func.
    """
    if __name__ != "__main__":
        cloudpickle.register_pickle_by_value(sys.modules[__name__])


def start_console(user_state: DataFrame, checkpoints: Path, trigger: dict):
    return (
        user_state.writeStream.format("console")
        .outputMode("update")  # the mode given to applyInPandasWithState must match
        .option("truncate", False)
        .option("numRows", 20)
        # The checkpoint holds the per-user state: a restart continues every user's totals.
        .option("checkpointLocation", str(checkpoints / "user_state"))
        .queryName("user_state_console")
        .trigger(**trigger)
        .start()
    )


def run_until_input_done(query, duration: float, *, input_done) -> None:
    """Run until ``input_done()`` says no more files will come and the query has read them
    all, or until ``duration`` seconds have passed."""
    deadline = time.monotonic() + duration
    try:
        while time.monotonic() < deadline and query.isActive and not input_done():
            query.awaitTermination(POLL_SECONDS)  # raises if the query failed
        if query.isActive and time.monotonic() < deadline:
            # processAllAvailable has no timeout of its own; in a thread, the deadline holds.
            drainer = threading.Thread(target=drain, args=(query,), daemon=True)
            drainer.start()
            drainer.join(max(0.0, deadline - time.monotonic()))
    finally:
        stop_between_batches(query)
    if query.exception() is not None:
        raise query.exception()


def drain(query) -> None:
    try:
        query.processAllAvailable()
    except StreamingQueryException:
        return  # raised again from query.exception() by the caller


def simulator_done(simulator, external: bool):
    """A check that says when no more files will come from the simulator."""

    def done() -> bool:
        if simulator is not None:  # the one this lesson started
            return simulator.poll() is not None
        if external:  # the one in the second terminal
            return not simulators.is_running("ecommerce")
        return False  # --no-simulator: run for --duration

    return done


def explain_missing_map_groups_with_state(spark) -> bool:
    """Show that the seeds' mapGroupsWithState is not in PySpark's API; returns whether it is."""
    grouped = spark.range(1).groupBy("id")
    exists = hasattr(GroupedData, "mapGroupsWithState") and hasattr(grouped, "mapGroupsWithState")
    print(f"grouped.mapGroupsWithState exists in PySpark: {exists}")
    say("""Some tutorials write def update(key, events, state: GroupState) and pass it to
        mapGroupsWithState: that API is Scala/Java only, so in Python it fails with an
        AttributeError before any data flows (and state.getOption there is a Scala idiom
        too). PySpark's way is groupBy(...).applyInPandasWithState(func, output schema,
        state schema, output mode, timeout): func gets the key, an iterator of pandas
        DataFrames and a GroupState, and yields pandas DataFrames.""")
    return exists


def report_state(query) -> None:
    """What the state store held at the end, from the query's progress reports."""
    progress = [p for p in query.recentProgress if p.get("stateOperators")]
    if not progress:
        print("No micro-batch ran: no events were read (--reset reads the folder again).")
        return
    closed = sum(p["stateOperators"][0].get("numRowsRemoved", 0) for p in progress)
    kept = progress[-1]["stateOperators"][0]["numRowsTotal"]
    say(f"""After {len(query.recentProgress)} micro-batches the state store keeps {kept} open
        users; {closed} were closed by the timeout and removed. Their state is in the
        checkpoint: run again and each user continues where it stopped (--reset starts over).""")


def count_left_out(spark, folder: Path) -> int:
    """Lines of the folder that have no user or no time: they cannot be kept in any state."""
    if not any(folder.glob("*.json")):
        return 0
    rows = spark.read.schema(ECOMMERCE_EVENT_SCHEMA).json(str(folder))
    return rows.where(F.col("user_id").isNull() | F.col("timestamp").isNull()).count()


def report_left_out(spark, folder: Path) -> None:
    """Say how many malformed lines build_user_state left out, so none is lost silently."""
    left_out = count_left_out(spark, folder)
    if left_out:
        say(f"""{left_out} line(s) in {paths.display(folder)} have no user_id or timestamp (malformed
            JSON) and were left out of the state; lesson 03 shows how to quarantine such lines.""")
    else:
        print(f"Every line in {paths.display(folder)} had a user and a time: none was left out.")


if __name__ == "__main__":
    run_lesson(main)

r"""12 · Arbitrary stateful processing: your own per-user state with applyInPandasWithState.

What you'll learn
  - ``groupBy(key).applyInPandasWithState(func, output_schema, state_schema, "update",
    GroupStateTimeout.EventTimeTimeout)``: Spark calls ``func`` once per user per
    micro-batch with that user's new rows (pandas DataFrames) and a ``GroupState``.
  - The ``GroupState`` API: ``state.getOption`` (or ``exists`` / ``get``) reads what you kept,
    ``update(tuple)`` keeps it for the next batch, ``remove()`` forgets it,
    ``setTimeoutTimestamp(ms)`` asks to be called again once the watermark passes that time.
  - An event-time timeout closes idle users, often in a batch with no new data at all.
  - The rule your own timeouts must follow: never earlier than ``state.getCurrentWatermarkMs()``.
    Late rows are filtered with the previous batch's watermark, so a row that got in can be
    older than the watermark ``func`` sees; a timeout computed from it kills the query.
  - Python has no ``mapGroupsWithState`` (Scala/Java only): it uses applyInPandasWithState.

Run
  python streaming_tutorial/12_stateful_processing.py           # the files in data/ecommerce_events
  python streaming_tutorial/12_stateful_processing.py --reset   # forget the state, read them again
  Files already there and no simulator running: it reads them once and stops. No files: it
  starts the shop simulator (4 files, one every 3 s) and stops once they are read. The state
  lives in the checkpoint, so a second run continues every open user. To run the simulator
  yourself, start it first in a second terminal:
    python data_generators/generate_ecommerce_events.py --count 4 --interval 3 \
      --base-time 2025-01-15T10:30:00Z
    python streaming_tutorial/12_stateful_processing.py

Practise
  python course.py exercises check 12.1   Running totals that close (build)

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
  ...
  |USER-2022|closed|4     |0        |0.0        |2025-01-15 10:30:33|
  +---------+------+------+---------+-----------+-------------------+
  ...
  Batch: 4
  ...
  |USER-2036|closed|4     |1        |179.98     |2025-01-15 10:31:51|
  |USER-2019|closed|2     |0        |0.0        |2025-01-15 10:31:41|
  |USER-2023|closed|3     |0        |0.0        |2025-01-15 10:31:34|
  +---------+------+------+---------+-----------+-------------------+
  After 5 micro-batches the state store keeps 11 open users; 9 were closed
  by the timeout and removed. ...
  Lines quarantined with their reason in output/12_stateful_processing/quarantine: none
  ...
  3. The rule for your own timeouts: never behind the current watermark
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Iterator

import pandas as pd
from pyspark import cloudpickle
from pyspark.sql import DataFrame, GroupedData
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from common import paths
from common.parsing import parse_json, quarantine_summary, quarantined, valid_records
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from infra import cli
from infra.runner import banner, checkpoint_root, lesson_session, run_lesson, run_queries, say
from infra.simulators import file_input_for_lesson
from teaching import progress

LESSON = "12_stateful_processing"
# An upper bound in seconds: the lesson stops once the simulator is done and its files are read.
DEFAULT_DURATION = 60
MAX_FILES_PER_TRIGGER = 1  # one file per micro-batch, so state visibly grows batch by batch
TRIGGER_INTERVAL = "2 seconds"
WATERMARK_DELAY = "10 seconds"  # how late an event may be and still count
IDLE_TIMEOUT = timedelta(minutes=1)  # a user with no event for this long (event time) is closed
# The simulator the lesson starts when the folder is empty: a fixed base time, so the run
# shows the same users (and the same closed sessions) as the docstring.
SIMULATOR = (
    "ecommerce",
    "generate_ecommerce_events.py",
    ["--count", "4", "--interval", "3", "--base-time", "2025-01-15T10:30:00Z"],
)

# What func returns: one row per user per batch in which something happened to the user
# (status active: had events this batch | closed: timed out).
OUTPUT_SCHEMA = (
    "user_id STRING, status STRING, events LONG, purchases LONG, total_spent DOUBLE, "
    "last_seen TIMESTAMP"
)
# What Spark keeps per user between batches (in the checkpoint's state store); last_seen_ms is
# in epoch milliseconds, what the timeout API uses.
STATE_SCHEMA = "events LONG, purchases LONG, total_spent DOUBLE, last_seen_ms LONG"


def read_events(spark, folder: Path) -> DataFrame:
    """The folder's shop events, one file per micro-batch, parsed with a quarantine reason."""
    # A file source needs its folder when the query starts, even before the first file lands.
    folder.mkdir(parents=True, exist_ok=True)
    lines = (
        # Lines as text, not .json(): a line that does not parse keeps its text (lesson 03).
        spark.readStream.format("text")
        .option("maxFilesPerTrigger", MAX_FILES_PER_TRIGGER)
        .load(paths.uri(folder))
        # _metadata is the hidden per-file column of file sources: which file each line came from.
        .withColumn("source_file", F.col("_metadata.file_name"))
    )
    # Lesson 03's parse: the event's fields, and a quarantine_reason for a line that is no event.
    return parse_json(lines, ECOMMERCE_EVENT_SCHEMA)


def build_user_state(
    events: DataFrame,
    *,
    idle_timeout: timedelta = IDLE_TIMEOUT,
    watermark_delay: str = WATERMARK_DELAY,
) -> DataFrame:
    """Running totals per user: one "active" row per user per batch with events, and one
    final "closed" row once the user has been idle for ``idle_timeout`` of event time."""
    idle_timeout_ms = int(idle_timeout.total_seconds() * 1000)

    def update_user_state(
        key: tuple, batches: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        """Called by Spark once per user per micro-batch with the user's key (a tuple), its new
        rows as pandas DataFrames (none when the call is a timeout) and its GroupState."""
        (user_id,) = key
        if state.hasTimedOut:
            # Called with no rows because the watermark passed the timeout we set: say goodbye
            # and forget the user, or the state store would keep every user ever seen.
            kept = state.get
            state.remove()
            yield to_summary(user_id, "closed", *kept)
            return
        # getOption: the tuple in STATE_SCHEMA's order, or None for a user seen the first time.
        events, purchases, spent, last_seen_ms = state.getOption or (0, 0, 0.0, 0)
        for rows in batches:
            bought = rows[rows["event_type"] == "purchase"]
            events = events + len(rows)
            purchases = purchases + len(bought)
            spent = round(spent + float((bought["price"] * bought["quantity"]).sum()), 2)
            # Naive pandas times in the session time zone (UTC): .value is ns since the epoch.
            last_seen_ms = max(last_seen_ms, rows["timestamp"].max().value // 1_000_000)
        state.update((events, purchases, spent, last_seen_ms))
        # Call me again once the watermark passes last_seen + idle_timeout, but never earlier
        # than the current watermark: Spark refuses that (INVALID_TIMEOUT_TIMESTAMP), and this
        # user's newest event can be behind it, since late rows are filtered with the previous
        # batch's.
        state.setTimeoutTimestamp(
            max(last_seen_ms + idle_timeout_ms, state.getCurrentWatermarkMs() + 1)
        )
        yield to_summary(user_id, "active", events, purchases, spent, last_seen_ms)

    if __name__ != "__main__":
        # Spark pickles func for its Python workers, and a worker cannot import a lesson
        # ("12_..." is no module name): when imported (the tests), ship its code by value.
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return (
        # The watermark drives the event-time timeout; without one, EventTimeTimeout fails at
        # start. Rows at or before the previous batch's watermark are dropped before func sees
        # them.
        events.withWatermark("timestamp", watermark_delay)
        .groupBy("user_id")
        .applyInPandasWithState(
            update_user_state,
            outputStructType=OUTPUT_SCHEMA,
            stateStructType=STATE_SCHEMA,
            # A row per call, not a final result; append would also work here.
            outputMode="update",
            timeoutConf=GroupStateTimeout.EventTimeTimeout,
        )
    )


def to_summary(
    user_id: str, status: str, events: int, purchases: int, spent: float, last_seen_ms: int
) -> pd.DataFrame:
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


def start_console(user_state: DataFrame, checkpoints: Path, trigger: dict) -> StreamingQuery:
    """The user state on the console, one table per micro-batch."""
    return (
        user_state.writeStream.format("console")
        .outputMode("update")  # the mode given to applyInPandasWithState must match
        .option("truncate", False)
        .option("numRows", 20)
        # The checkpoint holds the per-user state: a restart continues every user's totals.
        .option("checkpointLocation", paths.uri(checkpoints / "user_state"))
        .queryName("user_state_console")
        .trigger(**trigger)
        .start()
    )


def start_quarantine(
    bad: DataFrame, folder: Path, checkpoint: Path, trigger: dict
) -> StreamingQuery:
    """The lines that are no usable event, appended to JSON files with their reason."""
    return (
        bad.writeStream.format("json")
        .outputMode("append")
        .option("path", paths.uri(folder))
        # A checkpoint of its own: a restart adds only the bad lines it has not written yet.
        .option("checkpointLocation", paths.uri(checkpoint))
        .queryName("user_state_quarantine")
        .trigger(**trigger)
        .start()
    )


def start_queries(
    events: DataFrame, checkpoints: Path, quarantine: Path, trigger: dict
) -> list[StreamingQuery]:
    """The user state on the console; a line with no user or no time, which belongs to no
    state, to the quarantine with its reason."""
    user_state = build_user_state(valid_records(events, ECOMMERCE_EVENT_SCHEMA))
    bad = quarantined(events, "source_file")
    return [
        start_console(user_state, checkpoints, trigger),
        start_quarantine(bad, quarantine, checkpoints / "quarantine", trigger),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True)
    args = parser.parse_args(argv)
    folder = paths.ECOMMERCE_DIR
    checkpoints = checkpoint_root(LESSON, args)
    quarantine = paths.output_for(LESSON, "quarantine")
    idle_minutes = IDLE_TIMEOUT.seconds // 60
    with lesson_session(LESSON, args) as spark:
        banner("1. mapGroupsWithState is Scala/Java only")
        has_it = hasattr(GroupedData, "mapGroupsWithState")
        print(f"grouped.mapGroupsWithState exists in PySpark: {has_it}")
        say("""Some tutorials pass a Python function to mapGroupsWithState: that API is
            Scala/Java only, so in Python it is an AttributeError before any data flows.
            PySpark's way is groupBy(...).applyInPandasWithState(func, output schema, state
            schema, output mode, timeout): func gets the key, an iterator of pandas DataFrames
            and a GroupState, whose get, getOption, exists, update and remove work as in Scala
            (get, getOption and exists are properties in Python), and yields pandas
            DataFrames.""")

        banner(f"2. Per-user state; a user idle for {idle_minutes} min of event time is closed")
        with file_input_for_lesson(*SIMULATOR, folder, args) as files:
            # With files there and no simulator running: read them once (availableNow) and
            # stop; while files arrive, a micro-batch every few seconds.
            trigger = files.trigger(TRIGGER_INTERVAL)
            events = read_events(spark, folder)
            queries = start_queries(events, checkpoints, quarantine, trigger)
            run_queries(queries, args, until=files.done)
        # (batches, rows kept, rows removed), or None when no micro-batch ran.
        state = progress.state_totals(queries[0].recentProgress)
        if state:
            say(
                """After {} micro-batches the state store keeps {} open users; {} were closed
                by the timeout and removed. Their state is in the checkpoint: run again and
                each user continues where it stopped.""".format(*state)
            )
        else:
            say("""No new file since the last run: every user's state in the checkpoint is as
                it was. Start the simulator in a second terminal (see Run in this file) to add
                events to it.""")
        summary = quarantine_summary(spark, quarantine)
        print(f"Lines quarantined with their reason in {paths.display(quarantine)}: {summary}")

        banner("3. The rule for your own timeouts: never behind the current watermark")
        say(f"""Spark drops late rows with the previous batch's watermark, but func sees this
            batch's, which can be later than a new user's last event + {idle_minutes} min.
            setTimeoutTimestamp refuses a time behind it (INVALID_TIMEOUT_TIMESTAMP) and the
            query dies: so this lesson sets max(last event + timeout,
            state.getCurrentWatermarkMs() + 1).""")


if __name__ == "__main__":
    run_lesson(main)

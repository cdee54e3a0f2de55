"""15 · The state store: per-user sessions with transformWithState, and the state read back.

What you'll learn
  - ``groupBy(key).transformWithState(processor, schema, "Update", "EventTime")`` (4.1+): a
    ``StatefulProcessor`` with ValueState, ListState and MapState, ``handleInputRows(key, rows,
    timerValues)``, and ``handleExpiredTimer`` once the watermark passes a session's timer.
  - It needs the RocksDB state store: the default one fails, but only once the query runs.
  - Reading state back: ``state-metadata``, ``statestore`` (a variable, the timers, the change
    feed, a join side); ``dropDuplicatesWithinWatermark``; a state field added with avro.

Run
  python streaming_tutorial/15_state_store.py             # the files in data/ecommerce_events
  python streaming_tutorial/15_state_store.py --reset     # forget the sessions, read the files again
  No files and no simulator running: it starts the shop simulator (4 files, 3 s apart); or run it:
    python data_generators/generate_ecommerce_events.py --count 4 --interval 3 --base-time 2025-01-15T10:30:00Z

What you'll see
  transformWithState on the default (HDFS-backed) store starts, then fails (query.exception()):
    [UNSUPPORTED_FEATURE.STORE_BACKEND_NOT_SUPPORTED_FOR_TWS] The feature is not supported: ...
  |USER-2022|closed|4     |0.0   |3       |view>view>view>cart    |2025-01-15 10:30:33|
  stateVarName=session: 11 rows
    USER-2002   5, 119.98, 10:33:19
  readChangeFeed: what each micro-batch changed
    5      -                                             USER-2019 USER-2023 USER-2036
  09: joinSide=right (clicks kept): 2 rows
    IMP-1  CLK-1, IMP-1, 10:03:00
  spark.sql.streaming.stateStore.encodingFormat=avro, after the restart: [Row(user_id='U1', events=5, kept='(3, None)')]
  spark.sql.streaming.stateStore.encodingFormat=unsaferow (the default) starts, then fails (query.exception()):
    [STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] Provided value schema does not match existing state value schema.
"""

from __future__ import annotations

import sys
from datetime import timedelta, timezone
from pathlib import Path

from pyspark import cloudpickle
from pyspark.sql import DataFrame, GroupedData, Row
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor

from common import paths
from common.parsing import (
    parse_json,
    quarantine_summary,
    quarantined,
    read_json_lines,
    start_quarantine,
    valid_records,
)
from common.schemas import ECOMMERCE_EVENT_SCHEMA as EVENTS
from infra import cli
from infra.runner import banner, checkpoint_root, lesson_session, run_lesson, run_queries, say
from infra.simulators import file_input_for_lesson
from teaching import checkpoints, lateness, state_reader
from teaching.demos import Output, replay, show_refusal
from teaching.microbatch import stream_batches, write_batches
from teaching.state_reader import (
    CHANGELOG_CONF,
    ENCODING_CONF,
    HDFS_PROVIDER,
    PROVIDER_CONF,
    ROCKSDB_PROVIDER,
    count_events,
)

LESSON = "15_state_store"
DEFAULT_DURATION = (
    60  # an upper bound: the live part stops once the simulator is done and its files are read
)
TRIGGER_INTERVAL = "2 seconds"
WATERMARK_DELAY = "10 seconds"  # how late an event may be and still count
SESSION_GAP = timedelta(
    minutes=1
)  # a session ends after this long (event time) without an event of its user
RECENT_EVENTS = 4  # the event types a session keeps for its path
# transformWithState keeps its state in RocksDB (the only provider it supports); with changelog
# checkpointing each micro-batch writes only what changed, and the change feed can be read back.
STATE_STORE_CONF = {PROVIDER_CONF: ROCKSDB_PROVIDER, CHANGELOG_CONF: "true"}
SIMULATOR = (
    "ecommerce",
    "generate_ecommerce_events.py",
    ["--count", "4", "--interval", "3", "--base-time", "2025-01-15T10:30:00Z"],
)
OUTPUT = paths.output_for(LESSON)  # the scenarios' inputs and checkpoints, afresh on every run
SESSION_STATE = "events INT, spent DOUBLE, last_seen TIMESTAMP"
SESSION_SCHEMA = (
    "user_id STRING, status STRING, events INT, spent DOUBLE, products INT, path STRING, "
    "last_seen TIMESTAMP"
)
# Parts 5 and 6: views of U1, the same events delivered again (E1 three times, E2 twice), 2025-01-15 UTC.
REPLAYED = [
    [("E1", "10:30:00"), ("E2", "10:30:20"), ("E1", "10:30:00")],
    [("E1", "10:30:00"), ("E3", "10:31:00")],
    [("E4", "10:33:00"), ("E2", "10:30:20")],
]


def to_events(
    batches: list[list[tuple[str, str]]],
) -> list[list[dict]]:  # (event id, time) -> a view of U1
    return [
        [
            {
                "event_id": event,
                "user_id": "U1",
                "event_type": "view",
                "product_id": "P001",
                "timestamp": f"2025-01-15T{time}Z",
            }
            for event, time in batch
        ]
        for batch in batches
    ]


def read_events(spark, folder: Path) -> DataFrame:
    """The folder's shop events, one file per micro-batch, parsed with a quarantine reason."""
    return parse_json(read_json_lines(spark, folder, max_files_per_trigger=1), EVENTS)


def build_session_processor(
    gap: timedelta = SESSION_GAP, recent_ttl: timedelta | None = None
) -> StatefulProcessor:
    """A session per user: open while events come, closed by an event-time timer ``gap`` after its last."""
    gap_ms, ttl_ms = (
        int(gap.total_seconds() * 1000),
        recent_ttl and int(recent_ttl.total_seconds() * 1000),
    )

    class UserSessions(StatefulProcessor):
        def init(self, handle):
            # The state variables, by name and schema: one value (list, map) per key. TTL: see part 1.
            self.handle, self.session = handle, handle.getValueState("session", SESSION_STATE)
            self.recent = handle.getListState("recent_events", "event_type STRING", ttl_ms)
            self.views = handle.getMapState("product_views", "product_id STRING", "views INT")

        def handleInputRows(self, key, rows, timerValues):
            # key is ALWAYS a tuple, even for one grouping column, and timerValues is always passed:
            (user_id,) = (
                key  # 4.2's docstring example yields Row(id=key) and leaves timerValues out: both fail
            )
            events, spent, last_seen = self.session.get() or (0, 0.0, None)
            for row in sorted(
                rows, key=lambda row: row.timestamp
            ):  # Rows (transformWithStateInPandas: pandas)
                # Rows bring aware times, state gives back naive local ones: compare both in UTC.
                at, last_seen = (
                    time and time.astimezone(timezone.utc) for time in (row.timestamp, last_seen)
                )
                events, last_seen = events + 1, max(last_seen or at, at)
                spent = round(
                    spent + (row.price * row.quantity if row.event_type == "purchase" else 0.0), 2
                )
                self.recent.appendValue((row.event_type,))
                if row.product_id:  # a map per user: product -> views
                    seen = self.views.getValue((row.product_id,))
                    self.views.updateValue((row.product_id,), ((seen[0] if seen else 0) + 1,))
            self.recent.put(list(self.recent.get())[-RECENT_EVENTS:])
            self.session.update((events, spent, last_seen))
            # One timer per user, moved to the session's new end. Spark calls handleExpiredTimer once
            # the watermark passes it: no event of this session can still come then.
            [self.handle.deleteTimer(expiry) for expiry in self.handle.listTimers()]
            self.handle.registerTimer(int(last_seen.timestamp() * 1000) + gap_ms)
            yield self.summary(user_id, "open")

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            closed = self.summary(key[0], "closed")
            for state in (self.session, self.recent, self.views):
                state.clear()  # forget the user, or the state store keeps every user ever seen
            yield closed

        def summary(self, user_id: str, status: str) -> Row:
            events, spent, last_seen = self.session.get()
            return Row(
                user_id=user_id,
                status=status,
                events=events,
                spent=spent,
                products=len(list(self.views.keys())),
                path=">".join(t for (t,) in self.recent.get()),
                last_seen=last_seen,
            )

    return UserSessions()


def build_sessions(
    events: DataFrame,
    *,
    gap: timedelta = SESSION_GAP,
    recent_ttl: timedelta | None = None,
    watermark_delay: str = WATERMARK_DELAY,
) -> DataFrame:
    """One row per user per batch with events ("open"), and a last one once the timer closes it."""
    if (
        __name__ != "__main__"
    ):  # imported (the tests): Python workers cannot import "15_...": send it by value
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    # The watermark drives the event-time timers (and drops late rows before handleInputRows).
    return (
        events.withWatermark("timestamp", watermark_delay)
        .groupBy("user_id")
        .transformWithState(
            build_session_processor(gap, recent_ttl), SESSION_SCHEMA, "Update", "EventTime"
        )
    )


def build_replay_filters() -> dict[str, Output]:
    """Part 5: the same events through dropDuplicatesWithinWatermark and dropDuplicates."""
    return {
        "within watermark": Output(
            lambda events: events.withWatermark(
                "timestamp", "30 seconds"
            ).dropDuplicatesWithinWatermark(["event_id"]),
            sort_key=lambda r: r.event_id,
        ),
        "dropDuplicates": Output(
            lambda events: events.dropDuplicates(["event_id"]), sort_key=lambda r: r.event_id
        ),
    }


def read_state(spark, checkpoint: Path, **options) -> DataFrame:
    """The state rows as of the last committed batch; options pick what: stateVarName=..., joinSide=left,
    readRegisteredTimers=True, readChangeFeed=True (with changeStartBatchId)."""
    return spark.read.format("statestore").options(**options).load(paths.uri(checkpoint))


def read_session_state(spark, checkpoint: Path) -> dict[str, DataFrame]:
    """Part 3: the operators, each state variable, the timers, and what each batch changed in 'session'."""
    # state-metadata: every stateful operator, its stores, batches and (transformWithState) variables.
    states = {"state-metadata": spark.read.format("state-metadata").load(paths.uri(checkpoint))}
    states.update(
        {
            f"stateVarName={name}": read_state(spark, checkpoint, stateVarName=name)
            for name in ("session", "recent_events", "product_views")
        }
    )
    states["readRegisteredTimers"] = read_state(
        spark, checkpoint, readRegisteredTimers=True
    ).select(
        "key",
        F.timestamp_millis("expiration_timestamp_ms").alias("fires_once_the_watermark_passes"),
    )
    # Only with changelog checkpointing: every batch's changes, from changeStartBatchId on.
    states["readChangeFeed"] = read_state(
        spark, checkpoint, stateVarName="session", readChangeFeed=True, changeStartBatchId=0
    )
    return states


def read_other_lessons_state(spark, workdir: Path = OUTPUT) -> dict[str, DataFrame]:
    """Part 4: lesson 07's windowed count and 09's stream-stream join, each run on a few of its own events."""
    built = state_reader.other_lessons_checkpoints(spark, workdir)
    return {
        "07: windows still open": read_state(spark, built["07"]).select(
            "key.window.*", "value.count"
        ),
        # A join keeps a store per side; joinSide picks one.
        "09: joinSide=left (impressions kept)": read_state(spark, built["09"], joinSide="left"),
        "09: joinSide=right (clicks kept)": read_state(spark, built["09"], joinSide="right"),
    }


def start_on_default_store(spark):
    """Part 1: the sessions on one batch of REPLAYED, into nothing: only whether Spark runs it matters."""
    paths.remove_tree(OUTPUT / "hdfs", allow_outside=True)
    events = stream_batches(
        spark, write_batches(OUTPUT / "hdfs" / "input", to_events(REPLAYED[:1])), EVENTS
    )
    return (
        build_sessions(events)
        .writeStream.format("noop")
        .outputMode("update")
        .trigger(availableNow=True)
        .option("checkpointLocation", paths.uri(OUTPUT / "hdfs" / "checkpoint"))
        .start()
    )


def start_evolved_counts(spark, encoding: str, workdir: Path = OUTPUT) -> tuple:
    """Part 6: counts kept as (events), then restarted as (events, last_type), state encoded in ``encoding``."""
    return state_reader.start_restarted(
        spark,
        count_events("events INT"),
        count_events("events INT, last_type STRING"),
        to_events(REPLAYED[:2]),
        EVENTS,
        workdir / "evolution" / encoding,
        settings={ENCODING_CONF: encoding},
    )


def start_queries(events: DataFrame, checkpoints: Path, quarantine: Path, trigger: dict) -> list:
    """The sessions on the console (their state in the checkpoint); bad lines to the quarantine."""
    sessions = (
        build_sessions(valid_records(events, EVENTS))
        .writeStream.format("console")
        .outputMode("update")
        .option("truncate", False)
        .option("numRows", 30)
        .option("checkpointLocation", paths.uri(checkpoints / "sessions"))
        .queryName("sessions")
        .trigger(**trigger)
        .start()
    )
    return [
        sessions,
        start_quarantine(
            quarantined(events, "source_file"),
            quarantine,
            checkpoints / "quarantine",
            trigger,
            name="sessions_quarantine",
        ),
    ]


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True).parse_args(
        argv
    )
    root, quarantine = checkpoint_root(LESSON, args), paths.output_for(LESSON, "quarantine")
    with lesson_session(LESSON, args, extra_conf=STATE_STORE_CONF) as spark:
        banner("1. transformWithState, on the RocksDB state store")
        print(
            f"grouped.mapGroupsWithState exists in PySpark: {hasattr(GroupedData, 'mapGroupsWithState')}"
        )
        with state_reader.session_conf(spark, {PROVIDER_CONF: HDFS_PROVIDER}):
            show_refusal(
                lambda: start_on_default_store(spark),
                "transformWithState on the default (HDFS-backed) store",
            )
        say("""mapGroupsWithState is Scala/Java only: Python has applyInPandasWithState (lesson 12) and
            transformWithState. The default store keeps state in a hash map on the JVM heap (big state:
            long GC pauses), writing N.delta files; RocksDB keeps it on local disk, off the heap. A TTL
            needs timeMode ProcessingTime, where every trigger runs a batch: sessions end by timers.""")

        banner(
            f"2. Sessions per user, closed {SESSION_GAP.seconds // 60} min (event time) after their last event"
        )
        with file_input_for_lesson(*SIMULATOR, paths.ECOMMERCE_DIR, args) as files:
            events, trigger = (
                read_events(spark, paths.ECOMMERCE_DIR),
                files.trigger(TRIGGER_INTERVAL),
            )
            run_queries(start_queries(events, root, quarantine, trigger), args, until=files.done)
        print(
            f"Lines quarantined in {paths.display(quarantine)}: {quarantine_summary(spark, quarantine)}"
        )

        banner("3. The sessions' state, read back from the checkpoint")
        if checkpoints.last_commit(root / "sessions") is None:
            say(
                "No micro-batch has run yet, so there is no state to read: start the simulator (see Run)."
            )
        else:
            state_reader.print_states(read_session_state(spark, root / "sessions"))
            print(
                f"Files of state partition 0: {' '.join(state_reader.state_files(root / 'sessions')[:6])} ..."
            )
            say("""Open sessions are there, closed ones gone (handleExpiredTimer cleared them). With changelog
                checkpointing a batch writes its changes (N.changelog), and a snapshot (N.zip) now and
                then; without it, every batch uploads a snapshot and there is no change feed.""")

        banner("4. What lessons 07 and 09 keep (rebuilt on a few of their events)")
        state_reader.print_states(read_other_lessons_state(spark))
        say("""A windowed count keeps a row per open window (its count, and collect_list's buffer). A join
            keeps both sides' rows, matched or not, until the watermark passes the time bound.""")

        banner("5. Replayed events: dropDuplicatesWithinWatermark vs dropDuplicates")
        runs = replay(
            spark,
            to_events(REPLAYED),
            EVENTS,
            build_replay_filters(),
            OUTPUT / "dedup",
            describe_input=lambda records: " ".join(r["event_id"] for r in records),
            describe_rows=lambda rows: " ".join(row.event_id for row in rows),
        )
        lateness.print_state_rows({label: run.progress for label, run in runs.items()})
        say("""Both pass each event once; dropDuplicates remembers every id forever, the other forgets
            an id once the watermark passes its time + 30 s (a copy that late is dropped anyway).""")

        banner("6. A field added to a state variable: avro vs the default encoding")
        print(
            f"{ENCODING_CONF}=avro, after the restart: {state_reader.rows_of(*start_evolved_counts(spark, 'avro'))}"
        )
        show_refusal(
            lambda: start_evolved_counts(spark, "unsaferow")[0],
            f"{ENCODING_CONF}=unsaferow (the default)",
        )
        say("""The encoding is fixed at a checkpoint's start. Avro reads the old (3,) with the new schema,
            the new field null; the default encoding refuses any change of the schema.""")


if __name__ == "__main__":
    run_lesson(main)

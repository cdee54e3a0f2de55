"""15 · The state store: per-user sessions with transformWithState, and the state read back.

What you'll learn
  - ``groupBy(key).transformWithState(processor, schema, "Update", "EventTime")`` (4.1+): a
    ``StatefulProcessor`` with ValueState, ListState and MapState, ``handleInputRows(key, rows,
    timerValues)``, and ``handleExpiredTimer`` once the watermark passes a session's timer.
  - It needs the RocksDB state store: the default one fails, but only once the query runs.
    State from a batch table (``initialState``, ``handleInitialState``), a TTL that expires
    (ProcessingTime), and ``eventTimeColumnName`` for a window after the processor.
  - Reading state back (an experimental source): ``state-metadata``, ``statestore`` (a
    variable, the timers, the change feed, a join side, an older ``batchId``);
    ``dropDuplicatesWithinWatermark``; a state field added with avro, renamed silently without.

Run
  python streaming_tutorial/15_state_store.py            # the files in data/ecommerce_events
  python streaming_tutorial/15_state_store.py --reset    # forget the sessions, read the files again
  No files and no simulator running: it starts the shop simulator (4 files, 3 s apart); or run it:
    python data_generators/generate_ecommerce_events.py --count 4 --interval 3 \\
        --base-time 2025-01-15T10:30:00Z

Practise
  python course.py exercises check 15.1   Sessions closed by a timer (build)
  python course.py exercises check 15.2   A dedup that forgets (fix)
  python course.py exercises check 15.3   What the deduplication remembers (build)

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
  spark.sql.streaming.stateStore.encodingFormat=avro, after the restart: [Row(user_id='U1', ...
  spark.sql.streaming.stateStore.encodingFormat=unsaferow (the default) starts, then fails ...
    [STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] Provided value schema does not match existing ...
  'count INT' renamed 'total INT' (the default encoding), after the restart: [Row(user_id='U1', ...
  stateVarName=counts, batchId=0: 2 rows
  with a TTL of 1.5 s, restarted once it has passed:
  batch 2: 10:30:00-10:31:00 new users: 2
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from lesson15_state_demos import (
    describe_new_users,
    print_batches,
    rows_of,
    run_afresh,
    run_scenario,
    run_twice,
    session_conf,
    start_restarted,
    views_by,
    views_of_u1,
)
from pyspark import cloudpickle
from pyspark.sql import DataFrame, GroupedData, Row
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor

from common import paths

# Lesson 03 teaches parsing with a quarantine reason; this lesson reuses it.
from common.parsing import parse_json, quarantine_summary, quarantined, valid_records
from common.schemas import CLICK_SCHEMA, IMPRESSION_SCHEMA, SENSOR_SCHEMA
from common.schemas import ECOMMERCE_EVENT_SCHEMA as EVENTS
from infra import checkpoints, cli
from infra.checkpoints import state_files
from infra.runner import banner, checkpoint_root, lesson_session, run_lesson, run_queries, say
from infra.simulators import file_input_for_lesson
from teaching import lateness
from teaching.demos import Output, replay, show_refusal
from teaching.microbatch import stream_batches, write_batches
from teaching.state_reader import print_states

LESSON = "15_state_store"
# An upper bound: the live part stops once the simulator is done and its files are read.
DEFAULT_DURATION = 60
TRIGGER_INTERVAL = "2 seconds"
MAX_FILES_PER_TRIGGER = 1  # one simulator file per micro-batch: sessions grow batch by batch
WATERMARK_DELAY = "10 seconds"  # how late an event may be and still count
SESSION_GAP = timedelta(minutes=1)  # a session ends this long (event time) after its last event
RECENT_EVENTS = 4  # the event types a session keeps for its path
DEDUP_DELAY = "30 seconds"  # part 5: how long after its event time an id is remembered

# The state store. Spark reads these settings when a query starts from a fresh checkpoint; a
# checkpoint keeps the ones it started with.
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# Spark's default provider: state in a hash map on the JVM heap, written as N.delta files.
HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
DEFAULT_STORE = {PROVIDER_CONF: HDFS_PROVIDER}  # part 4: an aggregation on Spark's default store
# Part 8: in timeMode ProcessingTime every trigger runs a batch, new data or not (in Spark 4.2),
# so an availableNow query would never end; with this off it ends once its input is read.
NO_DATA_BATCHES_CONF = "spark.sql.streaming.noDataMicroBatches.enabled"
# How state rows are encoded: 'unsaferow' (the default) or 'avro'; fixed at a checkpoint's
# first start. Part 6 sets it for a checkpoint of its own.
ENCODING_CONF = "spark.sql.streaming.stateStore.encodingFormat"
# The settings of this lesson's session: every query in it keeps its state this way.
STATE_STORE_CONF = {
    # transformWithState keeps its state in RocksDB (the only provider it supports): on local
    # disk, off the JVM heap.
    PROVIDER_CONF: ROCKSDB_PROVIDER,
    # Changelog checkpointing: each micro-batch writes only what changed (N.changelog), and a
    # snapshot (N.zip) now and then. On RocksDB the change feed of part 3 needs it: the feed is
    # read from those files (the default store writes N.delta files, and has a feed too).
    CHANGELOG_CONF: "true",
}

SIMULATOR = (
    "ecommerce",
    "generate_ecommerce_events.py",
    ["--count", "4", "--interval", "3", "--base-time", "2025-01-15T10:30:00Z"],
)
OUTPUT = paths.output_for(LESSON)  # the scenarios' inputs and checkpoints, afresh on every run
SESSION_STATE = "events INT, spent DOUBLE, last_seen TIMESTAMP"  # the ValueState 'session'
SESSION_SCHEMA = (
    "user_id STRING, status STRING, events INT, spent DOUBLE, products INT, path STRING, "
    "last_seen TIMESTAMP"
)
COUNTS_SCHEMA = "user_id STRING, events INT, kept STRING"  # part 6's output
# Parts 5 and 6: views of U1, the same events delivered again (E1 three times, E2 twice),
# 2025-01-15 UTC.
REPLAYED = [
    [("E1", "10:30:00"), ("E2", "10:30:20"), ("E1", "10:30:00")],
    [("E1", "10:30:00"), ("E3", "10:31:00")],
    [("E4", "10:33:00"), ("E2", "10:30:20")],
]
FIRST_BATCHES = 2  # part 4 runs lessons 07 and 09 on the first micro-batches of their scenarios
YESTERDAY = [("U1", 3), ("U2", 5)]  # part 7: yesterday's counts, a batch table
YESTERDAY_SCHEMA = "user_id STRING, events INT"
COUNT_TTL = timedelta(seconds=1.5)  # part 8: a count is dropped this long after its last update
FIRST_VISITS_SCHEMA = "user_id STRING, first_seen TIMESTAMP"  # part 9's processor output
NEW_USERS_WINDOW = "1 minute"  # part 9: new users are counted per minute of their first visit
# Part 9: views (user, time of day), one list per micro-batch; U1 comes back in batch 1.
FIRST_VISITS = [
    [("U1", "10:30:05"), ("U2", "10:30:40"), ("U1", "10:30:50")],
    [("U3", "10:31:20"), ("U1", "10:31:30")],
    [("U4", "10:32:30")],
]


def read_events(spark, folder: Path) -> DataFrame:
    """The folder's shop events, one file per micro-batch, parsed with a quarantine reason."""
    folder.mkdir(parents=True, exist_ok=True)
    # Text first, so a line that is no good event is kept (and quarantined), never lost.
    lines = (
        spark.readStream.option("maxFilesPerTrigger", MAX_FILES_PER_TRIGGER)
        .text(paths.uri(folder))
        # _metadata is the hidden per-file column of file sources: which file each line came from.
        .withColumn("source_file", F.col("_metadata.file_name"))
    )
    # Lesson 03's parse: the event's fields, and a quarantine_reason (null for a good event).
    return parse_json(lines, EVENTS)


def in_utc(moment: datetime | None) -> datetime | None:
    """Rows bring aware times, state gives back naive local ones: compare both in UTC."""
    return moment and moment.astimezone(timezone.utc)


class UserSessions(StatefulProcessor):
    """A session per user: open while events come, closed by an event-time timer ``gap`` after
    its last event."""

    def __init__(self, gap: timedelta = SESSION_GAP, recent_ttl: timedelta | None = None):
        self.gap_ms = int(gap.total_seconds() * 1000)
        # A TTL drops a value that long after it was written (see part 1); None: no TTL.
        self.recent_ttl_ms = recent_ttl and int(recent_ttl.total_seconds() * 1000)

    def init(self, handle):
        # The state variables, by name and schema: one value (list, map) per key.
        self.handle = handle
        self.session = handle.getValueState("session", SESSION_STATE)
        self.recent = handle.getListState("recent_events", "event_type STRING", self.recent_ttl_ms)
        self.views = handle.getMapState("product_views", "product_id STRING", "views INT")

    def handleInputRows(self, key, rows, timerValues):
        # key is ALWAYS a tuple, even for one grouping column, and timerValues is always passed:
        # 4.2's docstring example yields Row(id=key) and leaves timerValues out: both fail.
        (user_id,) = key
        events, spent, last_seen = self.session.get() or (0, 0.0, None)
        last_seen = in_utc(last_seen)
        # rows: the key's Rows of this micro-batch (transformWithStateInPandas: pandas).
        for row in sorted(rows, key=lambda row: row.timestamp):
            at = in_utc(row.timestamp)
            events += 1
            last_seen = max(last_seen or at, at)
            if row.event_type == "purchase":
                spent = round(spent + row.price * row.quantity, 2)
            self.recent.appendValue((row.event_type,))
            if row.product_id:  # a map per user: product -> views
                seen = self.views.getValue((row.product_id,))
                views = seen[0] if seen else 0
                self.views.updateValue((row.product_id,), (views + 1,))
        self.recent.put(list(self.recent.get())[-RECENT_EVENTS:])
        self.session.update((events, spent, last_seen))
        # One timer per user, moved to the session's new end. Spark calls handleExpiredTimer once
        # the watermark passes it: no event of this session can still come then.
        for expiry in self.handle.listTimers():
            self.handle.deleteTimer(expiry)
        self.handle.registerTimer(int(last_seen.timestamp() * 1000) + self.gap_ms)
        yield self.summary(user_id, "open")

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        closed = self.summary(key[0], "closed")
        # Forget the user, or the state store keeps every user ever seen.
        self.session.clear()
        self.recent.clear()
        self.views.clear()
        yield closed

    def summary(self, user_id: str, status: str) -> Row:
        events, spent, last_seen = self.session.get()
        return Row(
            user_id=user_id,
            status=status,
            events=events,
            spent=spent,
            products=len(list(self.views.keys())),
            path=">".join(event_type for (event_type,) in self.recent.get()),
            last_seen=last_seen,
        )


class CountEvents(StatefulProcessor):
    """Parts 6-8: events per user in a ValueState of ``state_schema`` (its first field: the
    count; any others stay null). Outputs what the state held before, as text. ``ttl``: the
    count is dropped that long (processing time) after its last update."""

    def __init__(self, state_schema: str, ttl: timedelta | None = None):
        self.state_schema = state_schema
        self.ttl_ms = ttl and int(ttl.total_seconds() * 1000)

    def init(self, handle):
        # ttlDurationMs: None keeps the value for ever. An update restarts its TTL.
        self.counts = handle.getValueState("counts", self.state_schema, self.ttl_ms)

    def handleInitialState(self, key, initialState, timerValues):
        # Part 7: called in the first batch only, once per row of initialState (a Row with the
        # initial DataFrame's columns), before that key's handleInputRows; it outputs nothing.
        self.counts.update((initialState.events,) + (None,) * self.state_schema.count(","))

    def handleInputRows(self, key, rows, timerValues):
        kept = self.counts.get()
        events = (kept[0] if kept else 0) + sum(1 for _ in rows)
        # The count, then a null for each further field of the schema.
        self.counts.update((events,) + (None,) * self.state_schema.count(","))
        yield Row(user_id=key[0], events=events, kept=str(kept))


class FirstVisits(StatefulProcessor):
    """Part 9: one row per user, the first time they are seen, at their first event's time."""

    def init(self, handle):
        self.first_seen = handle.getValueState("first_seen", "first_seen TIMESTAMP")

    def handleInputRows(self, key, rows, timerValues):
        first = min(row.timestamp for row in rows)
        if not self.first_seen.exists():
            self.first_seen.update((first,))
            # With eventTimeColumnName, an output row must not be older than the watermark
            # that dropped the input's late rows (EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED):
            # an input row's own time never is.
            yield Row(user_id=key[0], first_seen=first)


def send_processors_by_value() -> None:
    """Imported (the tests), this file is a module Python workers cannot import (its name
    starts with a digit): have cloudpickle send its processors by value, as it does for
    __main__."""
    if __name__ != "__main__":
        cloudpickle.register_pickle_by_value(sys.modules[__name__])


def build_sessions(
    events: DataFrame,
    *,
    gap: timedelta = SESSION_GAP,
    recent_ttl: timedelta | None = None,
    watermark_delay: str = WATERMARK_DELAY,
) -> DataFrame:
    """One row per user per batch with events ("open"), and a last one once the timer closes it."""
    send_processors_by_value()
    # The watermark drives the event-time timers (and drops late rows before handleInputRows).
    return (
        events.withWatermark("timestamp", watermark_delay)
        .groupBy("user_id")
        .transformWithState(
            UserSessions(gap, recent_ttl),
            SESSION_SCHEMA,
            "Update",
            "EventTime",
        )
    )


def build_event_counts(
    events: DataFrame,
    state_schema: str = "events INT",
    *,
    yesterday: DataFrame | None = None,
    ttl: timedelta | None = None,
) -> DataFrame:
    """Parts 6-8: a count per user, kept in state of ``state_schema``; no timers. ``yesterday``:
    a batch DataFrame (user_id, events) the counts start from; ``ttl``: a count expires."""
    send_processors_by_value()
    return events.groupBy("user_id").transformWithState(
        CountEvents(state_schema, ttl),
        COUNTS_SCHEMA,
        "Update",
        # A TTL counts processing time: only timeMode ProcessingTime takes one (part 1).
        "ProcessingTime" if ttl else "None",
        # initialState: a batch DataFrame grouped by the same key; read in the first batch only.
        initialState=yesterday.groupBy("user_id") if yesterday is not None else None,
    )


def build_new_users_per_minute(
    events: DataFrame, event_time_column: str = "first_seen"
) -> DataFrame:
    """Part 9: users seen for the first time, counted per minute of their first visit; each
    minute is output once (append), when the watermark reaches its end."""
    send_processors_by_value()
    first_visits = (
        events.withWatermark("timestamp", WATERMARK_DELAY)
        .groupBy("user_id")
        .transformWithState(
            FirstVisits(),
            FIRST_VISITS_SCHEMA,
            "Append",
            "EventTime",
            # The output's first_seen becomes the event-time column, under the input's
            # watermark: the window below can close. "" (the default): the output has none.
            eventTimeColumnName=event_time_column,
        )
    )
    return first_visits.groupBy(F.window("first_seen", NEW_USERS_WINDOW)).agg(
        F.count("*").alias("new_users")
    )


def build_events_per_user(events: DataFrame) -> DataFrame:
    """Part 4: a plain aggregation, whose state any store keeps."""
    return events.groupBy("user_id").count()


def build_dedup_within_watermark(events: DataFrame) -> DataFrame:
    """Part 5: each event_id once; an id is forgotten once the watermark reaches its time + 30 s."""
    return events.withWatermark("timestamp", DEDUP_DELAY).dropDuplicatesWithinWatermark(
        ["event_id"]
    )


def build_dedup_forever(events: DataFrame) -> DataFrame:
    """Part 5: each event_id once; every id is remembered for ever."""
    return events.dropDuplicates(["event_id"])


def dedup_outputs() -> dict[str, Output]:
    """Part 5: the two deduplications, each replayed on the same events."""
    return {
        "within watermark": Output(build_dedup_within_watermark, sort_key=lambda r: r.event_id),
        "dropDuplicates": Output(build_dedup_forever, sort_key=lambda r: r.event_id),
    }


def read_session_state(spark, checkpoint: Path) -> dict[str, DataFrame]:
    """Part 3: the operators, each state variable, the timers, and what each batch changed in
    'session'; batch DataFrames, as of the last committed micro-batch."""
    location = paths.uri(checkpoint)
    # state-metadata: every stateful operator, its stores, batches and (transformWithState)
    # variables.
    states = {"state-metadata": spark.read.format("state-metadata").load(location)}
    # statestore: the rows of one state variable, by the name init() gave it.
    for name in ("session", "recent_events", "product_views"):
        states[f"stateVarName={name}"] = (
            spark.read.format("statestore").option("stateVarName", name).load(location)
        )
    # The timers still registered: each key, and when its timer is due.
    timers = spark.read.format("statestore").option("readRegisteredTimers", True).load(location)
    states["readRegisteredTimers"] = timers.select(
        "key",
        F.timestamp_millis("expiration_timestamp_ms").alias("fires_once_the_watermark_passes"),
    )
    # Every batch's changes, from changeStartBatchId on, read from the store's per-batch files:
    # N.changelog on RocksDB (so only with changelog checkpointing), N.delta on the default store.
    states["readChangeFeed"] = (
        spark.read.format("statestore")
        .option("stateVarName", "session")
        .option("readChangeFeed", True)
        .option("changeStartBatchId", 0)
        .load(location)
    )
    return states


def read_other_lessons_state(spark, workdir: Path = OUTPUT) -> dict[str, DataFrame]:
    """Part 4: lesson 07's windowed count and 09's stream-stream join, each run afresh on the
    first batches of its own scenario, then their state read back."""
    # Lesson 07 teaches the windowed count with a watermark, lesson 09 the stream-stream join:
    # their own build_ functions and scenarios.
    watermarking = paths.import_lesson("07_watermarking")
    joins = paths.import_lesson("09_stream_joins")
    sensor_batches = watermarking.to_readings(watermarking.SCENARIO[:FIRST_BATCHES])
    readings = {"readings": (sensor_batches, SENSOR_SCHEMA)}
    ads = {
        "impressions": (joins.IMPRESSIONS[:FIRST_BATCHES], IMPRESSION_SCHEMA),
        "clicks": (joins.CLICKS[:FIRST_BATCHES], CLICK_SCHEMA),
    }
    windows = run_scenario(spark, readings, watermarking.build_window_counts, workdir / "07")
    join = run_scenario(spark, ads, joins.build_ad_join, workdir / "09")
    open_windows = spark.read.format("statestore").load(paths.uri(windows))
    return {
        "07: windows still open": open_windows.select("key.window.*", "value.count"),
        # A join keeps a store per side; joinSide picks one.
        "09: joinSide=left (impressions kept)": (
            spark.read.format("statestore").option("joinSide", "left").load(paths.uri(join))
        ),
        "09: joinSide=right (clicks kept)": (
            spark.read.format("statestore").option("joinSide", "right").load(paths.uri(join))
        ),
    }


def read_count_changes(spark, store: dict[str, str], workdir: Path = OUTPUT) -> DataFrame:
    """Part 4: events per user on the REPLAYED views, its state kept in ``store`` (the provider
    settings, read when the query starts), then that state's change feed."""
    inputs = {"events": (views_of_u1(REPLAYED), EVENTS)}
    with session_conf(spark, store):
        checkpoint = run_scenario(
            spark, inputs, build_events_per_user, workdir / "feed", output_mode="update"
        )
    # The reader takes the provider from the checkpoint, not from the session.
    return (
        spark.read.format("statestore")
        .option("readChangeFeed", True)
        .option("changeStartBatchId", 0)
        .load(paths.uri(checkpoint))
    )


def read_counts(spark, checkpoint: Path, batch_id: int | None = None) -> DataFrame:
    """Part 7: the 'counts' state variable as of the last committed batch, or as of an older
    ``batch_id`` (a version still in the checkpoint)."""
    reader = spark.read.format("statestore").option("stateVarName", "counts")
    if batch_id is not None:
        reader = reader.option("batchId", batch_id)
    return reader.load(paths.uri(checkpoint))


def start_on_default_store(spark):
    """Part 1: the sessions on one batch of REPLAYED, into nothing: only whether Spark runs it
    matters."""
    paths.remove_tree(OUTPUT / "hdfs", allow_outside=True)
    folder = write_batches(OUTPUT / "hdfs" / "input", views_of_u1(REPLAYED[:1]))
    events = stream_batches(spark, folder, EVENTS)
    return (
        build_sessions(events)
        .writeStream.format("noop")
        .outputMode("update")
        .trigger(availableNow=True)
        .option("checkpointLocation", paths.uri(OUTPUT / "hdfs" / "checkpoint"))
        .start()
    )


def start_evolved_counts(spark, encoding: str, workdir: Path = OUTPUT) -> tuple:
    """Part 6: counts kept as (events), then restarted as (events, last_type), with the state
    encoded in ``encoding``: (the restarted query, its Run)."""
    return start_restarted(
        spark,
        lambda events: build_event_counts(events, "events INT"),
        lambda events: build_event_counts(events, "events INT, last_type STRING"),
        views_of_u1(REPLAYED[:2]),
        EVENTS,
        workdir / "evolution" / encoding,
        # For the first run only: the checkpoint keeps the encoding it started with.
        settings={ENCODING_CONF: encoding},
    )


def start_renamed_counts(spark, workdir: Path = OUTPUT) -> tuple:
    """Part 6: counts kept as (count), then restarted as (total), same type, with the default
    encoding: (the restarted query, its Run)."""
    return start_restarted(
        spark,
        lambda events: build_event_counts(events, "count INT"),
        lambda events: build_event_counts(events, "total INT"),
        views_of_u1(REPLAYED[:2]),
        EVENTS,
        workdir / "rename",
    )


def start_queries(events: DataFrame, checkpoint_dir: Path, quarantine: Path, trigger: dict) -> list:
    """The sessions on the console (their state in the checkpoint); bad lines to the quarantine."""
    # Update mode: each batch prints the sessions it opened, extended or closed.
    sessions = (
        build_sessions(valid_records(events, EVENTS))
        .writeStream.format("console")
        .outputMode("update")
        .option("truncate", False)
        .option("numRows", 30)
        .option("checkpointLocation", paths.uri(checkpoint_dir / "sessions"))
        .queryName("sessions")
        .trigger(**trigger)
        .start()
    )
    # The bad lines, kept whole with their reason in JSON files (lesson 03's quarantine).
    bad_lines = (
        quarantined(events, "source_file")
        .writeStream.format("json")
        .outputMode("append")
        .option("path", paths.uri(quarantine))
        .option("checkpointLocation", paths.uri(checkpoint_dir / "quarantine"))
        .queryName("sessions_quarantine")
        .trigger(**trigger)
        .start()
    )
    return [sessions, bad_lines]


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True)
    args = parser.parse_args(argv)
    root = checkpoint_root(LESSON, args)
    quarantine = paths.output_for(LESSON, "quarantine")
    # The state store settings hold for the whole session.
    with lesson_session(LESSON, args, extra_conf=STATE_STORE_CONF) as spark:
        banner("1. transformWithState, on the RocksDB state store")
        has_map_groups = hasattr(GroupedData, "mapGroupsWithState")
        print(f"grouped.mapGroupsWithState exists in PySpark: {has_map_groups}")
        # Spark's default provider, for this one query: start() accepts it, the first batch fails.
        with session_conf(spark, {PROVIDER_CONF: HDFS_PROVIDER}):
            show_refusal(
                lambda: start_on_default_store(spark),
                "transformWithState on the default (HDFS-backed) store",
            )
        say("""mapGroupsWithState is Scala/Java only: Python has applyInPandasWithState (lesson
            12) and transformWithState. The default store keeps state in a hash map on the JVM
            heap (big state: long GC pauses), writing N.delta files; RocksDB keeps it on local
            disk, off the heap. A TTL needs timeMode ProcessingTime, where every trigger runs a
            batch: sessions end by timers.""")

        banner(
            f"2. Sessions per user, closed {SESSION_GAP.seconds // 60} min (event time) "
            "after their last event"
        )
        with file_input_for_lesson(*SIMULATOR, paths.ECOMMERCE_DIR, args) as files:
            events = read_events(spark, paths.ECOMMERCE_DIR)
            trigger = files.trigger(TRIGGER_INTERVAL)
            run_queries(start_queries(events, root, quarantine, trigger), args, until=files.done)
        summary = quarantine_summary(spark, quarantine)
        print(f"Lines quarantined in {paths.display(quarantine)}: {summary}")

        banner("3. The sessions' state, read back from the checkpoint")
        if checkpoints.last_commit(root / "sessions") is None:
            say(
                "No micro-batch has run yet, so there is no state to read: "
                "start the simulator (see Run)."
            )
        else:
            print_states(read_session_state(spark, root / "sessions"))
            first_files = " ".join(state_files(root / "sessions")[:6])
            print(f"Files of state partition 0: {first_files} ...")
            say("""Open sessions are there, closed ones gone (handleExpiredTimer cleared them).
                With changelog checkpointing a batch writes its changes (N.changelog), and a
                snapshot (N.zip) now and then; without it, every batch uploads a snapshot and
                RocksDB has no change feed. Spark's guide marks the state data source
                experimental: its options and output may change.""")

        banner(
            "4. What lessons 07 and 09 keep (rebuilt on a few of their events), "
            "and a change feed on the default store"
        )
        print_states(read_other_lessons_state(spark))
        changes = read_count_changes(spark, DEFAULT_STORE)
        print_states(
            {"events per user on the default (HDFS-backed) store, readChangeFeed": changes}
        )
        say("""A windowed count keeps a row per open window (its count, and collect_list's
            buffer). A join keeps both sides' rows, matched or not, until the watermark passes
            the time bound. The default store has a change feed too, read from its N.delta
            files: only RocksDB without changelog checkpointing has none (in Spark 4.2).""")

        banner("5. Replayed events: dropDuplicatesWithinWatermark vs dropDuplicates")
        runs = replay(
            spark,
            views_of_u1(REPLAYED),
            EVENTS,
            dedup_outputs(),
            OUTPUT / "dedup",
            describe_input=lambda records: " ".join(r["event_id"] for r in records),
            describe_rows=lambda rows: " ".join(row.event_id for row in rows),
        )
        lateness.print_state_rows({label: run.progress for label, run in runs.items()})
        say("""Both pass each event once; dropDuplicates remembers every id forever, the other
            forgets an id once the watermark reaches its time + 30 s (a copy that late is
            dropped anyway).""")

        banner("6. A field added to a state variable: avro vs the default encoding")
        query, run = start_evolved_counts(spark, "avro")
        print(f"{ENCODING_CONF}=avro, after the restart: {rows_of(query, run)}")
        show_refusal(
            lambda: start_evolved_counts(spark, "unsaferow")[0],
            f"{ENCODING_CONF}=unsaferow (the default)",
        )
        query, run = start_renamed_counts(spark)
        renamed = rows_of(query, run)
        print(
            f"'count INT' renamed 'total INT' (the default encoding), after the restart: {renamed}"
        )
        say("""The encoding is fixed at a checkpoint's start. Avro reads the old (3,) with the
            new schema, the new field null. The default encoding checks only the number and
            types of the fields (in Spark 4.2): it refuses a field added, dropped or retyped,
            but takes a renamed one silently and reads the old value by position.""")

        banner("7. State from yesterday's batch table: initialState, read back at an older batchId")
        yesterday = spark.createDataFrame(YESTERDAY, YESTERDAY_SCHEMA)
        run, checkpoint = run_afresh(
            spark,
            lambda events: build_event_counts(events, yesterday=yesterday),
            views_of_u1(REPLAYED[:2]),
            EVENTS,
            OUTPUT / "yesterday",
        )
        print(f"Yesterday's counts: {YESTERDAY}")
        print_batches("Today's views of U1, counted on from yesterday", run)
        print_states(
            {
                "stateVarName=counts": read_counts(spark, checkpoint),
                "stateVarName=counts, batchId=0": read_counts(spark, checkpoint, batch_id=0),
            }
        )
        say("""handleInitialState ran in batch 0 for every key of the batch table, U2 too,
            which no event of today's stream named. batchId reads the state as it was after
            that batch, while the checkpoint still keeps that version.""")

        banner(f"8. A TTL that expires: {COUNT_TTL.total_seconds():g} s, timeMode ProcessingTime")
        runs = run_twice(
            spark,
            lambda events: build_event_counts(events, ttl=COUNT_TTL),
            views_of_u1(REPLAYED[:2]),
            EVENTS,
            OUTPUT / "ttl",
            wait_seconds=COUNT_TTL.total_seconds(),
            settings={NO_DATA_BATCHES_CONF: "false"},
        )
        print(f"with a TTL of {COUNT_TTL.total_seconds():g} s, restarted once it has passed:")
        print_batches("first run", runs[0])
        print_batches("second run", runs[1])
        say("""The second run's batch started more than the TTL after the count was written:
            get() finds nothing (kept='None') and counting starts again. A TTL counts
            processing time, so only timeMode ProcessingTime takes one; there every trigger
            runs a batch, new data or not, and availableNow ends only with
            spark.sql.streaming.noDataMicroBatches.enabled=false (in Spark 4.2).""")

        banner("9. eventTimeColumnName: a window after the processor")
        run, _ = run_afresh(
            spark,
            build_new_users_per_minute,
            views_by(FIRST_VISITS),
            EVENTS,
            OUTPUT / "first-visits",
            output_mode="append",
        )
        print_batches("New users per minute of their first visit", run, describe_new_users)
        say("""transformWithState's output has no event-time column of its own: an append-mode
            window on it is refused. eventTimeColumnName makes first_seen one, under the
            input's watermark, so each minute is output once the watermark reaches its end.""")


if __name__ == "__main__":
    run_lesson(main)

"""Check of 15.3: the learner's reader of a deduplication's state, on checkpoints the check made.

The run starts the scenario's query (the first scenario's deduplicates, then counts windows:
the deduplication is operator 1; the hidden one drops exact copies with a plain dropDuplicates,
then deduplicates within the watermark: the deduplication is operator 0 of two, on three shuffle
partitions) and lets it run to its end with availableNow. Then it calls the learner's
``read_remembered_ids`` once per micro-batch that ran (batch_id 0, 1, ...): the Observation has
one Batch per micro-batch, the rows read for it; and once without a batch_id, whose rows are a
fact (they must be the last batch's). Spark's own count of the deduplication's state rows after
each batch (numRowsTotal in the query's progress) is a fact too, the same in every run.
"""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import paths
from common.schemas import SENSOR_SCHEMA
from practice.checking import NotStarted
from practice.observe import Batch, Observation, plain, scenario_files, sort_rows
from practice.scenarios import reading
from practice.spec import Exercise, Mistake, Scenario
from teaching.microbatch import stream_batches

QUERY_TIMEOUT_SECONDS = 120  # a scenario of a few small batches ends far sooner
DELAY = "10 seconds"
LATEST_FACT = "rows read without a batch_id"
STATE_ROWS_FACT = "the deduplication's numRowsTotal after each batch (Spark's progress)"
DEDUPLICATION = "dedupeWithinWatermark"


def build_deduplicated_counts(readings: DataFrame) -> DataFrame:
    """The first scenario's query: the deduplication, then a windowed count on top of it."""
    return (
        readings.withWatermark("event_time", DELAY)
        .dropDuplicatesWithinWatermark(["reading_id"])
        .groupBy(F.window("event_time", "10 seconds"), "sensor_id")
        .count()
    )


def build_copies_then_deduplicated(readings: DataFrame) -> DataFrame:
    """The hidden scenario's query: exact copies (same id and time) dropped first, then the
    deduplication within the watermark, on top: operator 0, the plain dropDuplicates 1."""
    return (
        readings.withWatermark("event_time", DELAY)
        .dropDuplicates(["reading_id", "event_time"])
        .dropDuplicatesWithinWatermark(["reading_id"])
    )


def run_query(spark, scenario: Scenario, workdir: Path) -> list[dict]:
    """The scenario's query to its end; its progress reports."""
    folder = workdir / "input"
    folder.mkdir(parents=True)
    scenario_files(folder, scenario.batches, scenario)
    readings = stream_batches(spark, folder, SENSOR_SCHEMA)
    build = build_copies_then_deduplicated if scenario.hidden else build_deduplicated_counts
    query = (
        build(readings)
        .writeStream.format("noop")
        .outputMode("append")
        .option("checkpointLocation", paths.uri(workdir / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        if not query.awaitTermination(QUERY_TIMEOUT_SECONDS):
            raise TimeoutError(f"the query did not end within {QUERY_TIMEOUT_SECONDS} s")
    finally:
        if query.isActive:
            query.stop()
    return [report for report in query.recentProgress if "addBatch" in report["durationMs"]]


def read_with(module, spark, checkpoint: Path, *batch_id) -> tuple[list, list]:
    """(columns, rows as sorted plain tuples) of the learner's read."""
    try:
        state = module.read_remembered_ids(spark, checkpoint, *batch_id)
    except NotImplementedError as error:
        raise NotStarted() from error
    if not isinstance(state, DataFrame):
        raise TypeError(
            f"read_remembered_ids returned a {type(state).__name__}: return the DataFrame "
            "you read (spark.read...load(...), then select)"
        )
    return list(state.columns), sort_rows([plain(tuple(row)) for row in state.collect()])


def run(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """The query, then the learner's read of its state after each batch and without a
    batch_id."""
    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    progress = run_query(spark, scenario, workdir)
    checkpoint = workdir / "checkpoint"
    columns = []
    batches = []
    for report in progress:
        columns, rows = read_with(module, spark, checkpoint, report["batchId"])
        batches.append(Batch(rows))
    _, latest = read_with(module, spark, checkpoint)
    state_rows = [
        sum(
            operator["numRowsTotal"]
            for operator in report["stateOperators"]
            if operator["operatorName"] == DEDUPLICATION
        )
        for report in progress
    ]
    facts = {LATEST_FACT: [list(row) for row in latest], STATE_ROWS_FACT: state_rows}
    return Observation(columns, batches, facts=facts)


# --- What the mistakes look like -------------------------------------------------------------


def ids_of(batch: Batch) -> set:
    return {row[0] for row in batch.rows}


def every_batch_the_last(mine, wanted) -> bool:
    """Every batch read as the last one: the batch_id was not used."""
    if len(mine.batches) != len(wanted.batches) or not wanted.batches:
        return False
    last = wanted.batches[-1].rows
    return all(batch.rows == last for batch in mine.batches) and any(
        batch.rows != last for batch in wanted.batches
    )


def removed_ids_kept(mine, wanted) -> bool:
    """Some batch holds every id it should, and ids the state had already let go of."""
    if len(mine.batches) != len(wanted.batches):
        return False
    pairs = list(zip(wanted.batches, mine.batches, strict=True))
    return all(ids_of(want) <= ids_of(got) for want, got in pairs) and any(
        ids_of(got) - ids_of(want) for want, got in pairs
    )


def times_as_numbers(mine, wanted) -> bool:
    """forget_after is a number, not a time."""
    return any(
        len(row) > 1 and isinstance(row[1], (int, float))
        for batch in mine.batches
        for row in batch.rows
    )


EXERCISE = Exercise(
    title="What the deduplication remembers",
    kind="build",
    practises="the state data source: one operator's state, found by name, as of a batch",
    function="read_remembered_ids",
    schemas=SENSOR_SCHEMA,
    run=run,
    check_watermark=False,
    check_dropped=False,
    why=(
        "A checkpoint keeps one state store per stateful operator, numbered by the operator's "
        "place in that query's plan: state-metadata lists them with their names, so looking "
        "the deduplication up by operatorName finds it in any query. statestore reads one "
        "operator's state, every partition of it, as of the last committed batch, or as it "
        "was after an older one with batchId (while the checkpoint keeps that version). An "
        "id is deleted from the store once the watermark reaches its expiry, so it is in no "
        "later version."
    ),
    hints=[
        "Where does a query keep its state, and how many stores does a query with two "
        "stateful operators have? Which one holds the reading ids? And the state after an "
        "older micro-batch: is it still in the checkpoint?",
        "lesson 15, `read_session_state` reads spark.read.format('state-metadata') (one row "
        "per stateful operator: operatorId, operatorName; teaching/state_reader.metadata_rows "
        "prints them) and spark.read.format('statestore'); lesson 15, `read_counts` adds "
        ".option('batchId', ...); lesson 15, `read_other_lessons_state` picks one store of "
        "several with an option (joinSide).",
        "QUICK_REFERENCE (Read state back) says which option picks one of several stateful "
        "operators, where its number comes from, and what a dropDuplicatesWithinWatermark "
        "keeps as its value; lesson 15, `read_session_state` turns the timers' milliseconds "
        "into a timestamp, and microseconds have a function of their own.",
    ],
    scenarios=[
        # The deduplication is the query's second stateful operator (the count is operator 0).
        # r2's copy in batch 1 is dropped as a copy. r7 (10:29:58) comes after the watermark
        # passed it and never enters the state. Batch 3's watermark, 10:30:14, is exactly r2's
        # forget_after: r2 leaves with r1. The batch without data at the end (watermark
        # 10:30:31) lets go of every id but r5 and r9.
        Scenario(
            [
                [reading(1, "S1", "10:30:01"), reading(2, "S2", "10:30:04")],
                [
                    reading(3, "S1", "10:30:12"),
                    reading(4, "S2", "10:30:06"),
                    reading(2, "S2", "10:30:04"),
                ],
                [reading(5, "S1", "10:30:24"), reading(6, "S2", "10:30:15")],
                [reading(7, "S2", "10:29:58"), reading(8, "S1", "10:30:20")],
                [reading(9, "S1", "10:30:41")],
            ]
        ),
        # Exact copies dropped first, then the deduplication (operator 0 of two here), on
        # three shuffle partitions. r31's exact copy in batch 1 is dropped; batch 2's
        # watermark, 11:00:10, is exactly r31's forget_after, so r31 leaves; its copy with a
        # later time (11:00:13) in batch 3 is let through and kept again, until 11:00:23. r37
        # (11:00:09) comes too late. r34 leaves at the end exactly on its forget_after,
        # 11:00:30.
        Scenario(
            [
                [
                    reading(31, "A", "11:00:00"),
                    reading(32, "B", "11:00:04"),
                    reading(33, "C", "11:00:04"),
                ],
                [reading(34, "A", "11:00:20"), reading(31, "A", "11:00:00")],
                [reading(35, "B", "11:00:15"), reading(36, "C", "11:00:25")],
                [reading(31, "A", "11:00:13"), reading(37, "B", "11:00:09")],
                [reading(38, "C", "11:00:40")],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "default_operator",
            "The state you read has no reading_id in its key: without operatorId, statestore "
            "reads operator 0, which in this query is the windowed count (its key is the "
            "window and the sensor). state-metadata lists every stateful operator of the "
            "checkpoint with its operatorId and operatorName: read the deduplication's.",
            error=r"FIELD_NOT_FOUND.{0,80}reading_id",
        ),
        Mistake(
            "operator_by_position",
            "In the hidden scenario's checkpoint the operator you read is not the "
            "deduplication within the watermark (its value has no expiresAtMicros, or it has "
            "no state at all): that query has other stateful operators than the first one, so "
            "the deduplication has another operatorId there. Look it up in state-metadata, by "
            "its operatorName, in each checkpoint.",
            error=r"FIELD_NOT_FOUND.{0,80}expiresAtMicros|STDS_FAILED_TO_READ_STATE_SCHEMA",
        ),
        Mistake(
            "batch_id_ignored",
            "Every micro-batch shows the state after the last one: the read ignores batch_id. "
            "statestore reads the last committed batch unless .option('batchId', batch_id) "
            "asks for the state as it was after an older one.",
            when=every_batch_the_last,
        ),
        Mistake(
            "removed_ids_kept",
            "Some micro-batches have every id they should, and ids the state had already let "
            "go of (the watermark had reached their forget_after). Read the state as it is at "
            "that batch (statestore with batchId); if you rebuild it from readChangeFeed, a "
            "'delete' change removes its key.",
            when=removed_ids_kept,
        ),
        Mistake(
            "microseconds_as_milliseconds",
            "A forget_after lands in a year Python cannot hold: value.expiresAtMicros counts "
            "MICROseconds since the epoch, and F.timestamp_millis reads it as milliseconds. "
            "Use F.timestamp_micros.",
            error=r"year -?\d+ is out of range",
        ),
        Mistake(
            "micros_not_converted",
            "forget_after is a number: value.expiresAtMicros is microseconds since the epoch. "
            "Turn it into a timestamp with F.timestamp_micros.",
            when=times_as_numbers,
        ),
    ],
)

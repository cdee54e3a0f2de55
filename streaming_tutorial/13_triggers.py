"""13 · Triggers: when a micro-batch runs, and how fast a result can come out.

What you'll learn
  - The micro-batch triggers on one pipeline: the default (the next batch as soon as the
    last one ends), ``processingTime`` (one every N seconds), ``availableNow`` (what is
    there now, in batches that respect the source's limits, then stop) and ``once``
    (deprecated: one batch that ignores those limits; use ``availableNow``).
  - ``continuous`` (legacy): map-like queries only, no joins, no further development.
  - Real-time mode (Spark 4.1+; from Python ``trigger(realTime="5 seconds")``, new in
    pyspark 4.2): long-running tasks that pass each record on at once; the duration is how
    often progress is checkpointed.
    Processing is exactly-once, the Kafka sink at-least-once: a failure can re-send up to one
    batch duration of results.
  - What real-time mode refuses in Spark 4.2: any output mode but update, stateful operators,
    Python UDFs and other Python operators, sources other than Kafka, the memory and
    foreachBatch sinks, durations under 5 s.
  - Latency measured Kafka -> Spark -> Kafka on the same messages: p50 and p90 for
    real-time mode against a micro-batch query with trigger 0.

Run
  python streaming_tutorial/13_triggers.py                  # about 40 s; starts Kafka if needed
  python streaming_tutorial/13_triggers.py --duration 5     # measure latency on 5 s of messages
  The lesson writes its own messages; its topics and checkpoints are recreated on every
  run, so each trigger starts from the same first message (a second run resumes nothing).
  Another Kafka: KAFKA_BOOTSTRAP_SERVERS=host:9092 python streaming_tutorial/13_triggers.py

Practise
  python course.py exercises check 13.1   A backfill in batches (predict)
  python course.py exercises check 13.2   What real-time mode runs (predict)

What you'll see
  (a second run on 2 cores; the latency figures vary from run to run)
  Checkpoints: none yet in checkpoints/13_triggers, so every query starts from the beginning.
    trigger                     micro-batches  rows in each  one every  ends by itself
    default (no .trigger())     4              10+10+10+10   0.2 s      no
    processingTime='2 seconds'  4              10+10+10+10   2.0 s      no
    availableNow=True           4              10+10+10+10   0.2 s      yes
    once=True (deprecated)      1              40            -          yes
  This pipeline in continuous mode fails:
    Continuous processing does not support LocalRelation operations.;
  ...
  Real-time mode on the rate source starts, then fails (query.exception()):
    [STREAMING_REAL_TIME_MODE.INPUT_STREAM_NOT_SUPPORTED] Streaming real-time mode has ...
  ...
    trigger                     messages  p50     p90
    realTime='5 seconds'        200       8 ms    18 ms
    processingTime='0 seconds'  200       232 ms  365 ms
"""

from __future__ import annotations

import functools
from pathlib import Path

import lesson13_latency as latency
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import paths
from infra import cli
from infra.kafka import explain_failures, recreate_topics, security_options
from infra.kafka_broker import kafka_for_lesson
from infra.runner import (
    banner,
    checkpoint_root,
    drain,
    finish,
    lesson_session,
    run_lesson,
    say,
    stop_between_batches,
)
from teaching import demos, narration, progress

LESSON = "13_triggers"
DEFAULT_DURATION = 10  # seconds of messages for the latency measurement (part 4)
WORDS_TOPIC = "triggers-words"  # 40 messages, the finite input of part 1
LATENCY_TOPIC = "triggers-latency"  # the timed messages of part 4 (and parts 2 and 3's input)
REALTIME_OUT = "triggers-realtime"  # the real-time query's results
MICROBATCH_OUT = "triggers-microbatch"  # the micro-batch query's results
WORD_COUNT = 40
MAX_OFFSETS_PER_TRIGGER = 10  # so a trigger that respects the source's limits needs 4 batches
# What each message holds: an id, a word, and when it was sent (epoch ms, for the latency).
MESSAGE_FIELDS = "id INT, word STRING, sent_ms BIGINT"
# A static table, small enough to broadcast: the join real-time mode can run.
WORD_KINDS = [
    ("spark", "engine"),
    ("flink", "engine"),
    ("kafka", "log"),
    ("delta", "table"),
    ("arrow", "format"),
]
# Real-time mode: one long-running task per Kafka partition, each holding a core for the whole
# batch. local[*] on 2 cores: a 1-partition topic leaves the other core to the micro-batch query.
PARTITIONS = 1
# The shortest batch Spark accepts (spark.sql.streaming.realTimeMode.minBatchDuration).
REALTIME = {"realTime": "5 seconds"}
RATE = 20  # latency messages per second
LATENCY_OUTPUTS = {
    "realTime='5 seconds'": REALTIME_OUT,
    "processingTime='0 seconds'": MICROBATCH_OUT,
}


def read_words(spark, bootstrap: str, topic: str) -> DataFrame:
    """Part 1's messages from the first one, at most MAX_OFFSETS_PER_TRIGGER per micro-batch."""
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        # A secured cluster's login, from the environment (README); none for the course's broker.
        .options(**security_options(bootstrap))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        # The source's limit: a trigger that respects it reads the 40 messages in 4 batches.
        .option("maxOffsetsPerTrigger", MAX_OFFSETS_PER_TRIGGER)
        .load()
        # The value is JSON in bytes: as text, then its fields as columns.
        .select(F.from_json(F.col("value").cast("string"), MESSAGE_FIELDS).alias("m"))
        .select("m.*")
    )


def read_messages(
    spark, bootstrap: str, topic: str, *, starting_offsets: str = "earliest"
) -> DataFrame:
    """The topic's messages, with no limit per batch: id, word, and when each was sent.

    sent_ms is for the latency measurement of part 4.
    """
    # No maxOffsetsPerTrigger: parts 2 to 4 take every message there is, never held back by
    # a limit per batch.
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .options(**security_options(bootstrap))
        .option("subscribe", topic)
        .option("startingOffsets", starting_offsets)
        .load()
        .select(F.from_json(F.col("value").cast("string"), MESSAGE_FIELDS).alias("m"))
        .select("m.*")
    )


def read_kinds(spark) -> DataFrame:
    """The static table, as literal rows in the plan.

    createDataFrame would make an RDD of them.
    """
    rows = ", ".join(f"('{word}', '{kind}')" for word, kind in WORD_KINDS)
    return spark.sql(f"SELECT * FROM VALUES {rows} AS kinds(word, kind)")


def build_tagged(messages: DataFrame, kinds: DataFrame) -> DataFrame:
    """The lesson's pipeline: each word in capitals with its kind from a static table."""
    # broadcast(): every task gets its own copy of the small table, so the join needs no
    # shuffle and keeps no state; it is the one join real-time mode runs.
    tagged = messages.join(F.broadcast(kinds), "word")
    return tagged.select("id", F.upper("word").alias("word"), "kind", "sent_ms")


def to_kafka_record(tagged: DataFrame) -> DataFrame:
    """key = the word, value = the result as JSON, sent_ms carried along for the latency."""
    return tagged.select(
        F.col("word").alias("key"), F.to_json(F.struct(*tagged.columns)).alias("value")
    )


# Part 1: the same pipeline into the noop sink, which computes every row and writes nothing,
# with each micro-batch trigger. The progress reports say what ran.


def start_default(tagged: DataFrame, checkpoint: Path):
    """No .trigger(): the next micro-batch starts as soon as the last one ends."""
    return (
        tagged.writeStream.format("noop")
        .option("checkpointLocation", paths.uri(checkpoint))
        # No .trigger() here: this is the default.
        .start()
    )


def start_processing_time(tagged: DataFrame, checkpoint: Path):
    """At most one micro-batch every 2 seconds, started at the next multiple of the interval
    (at once if the last batch ran longer; skipped when there is nothing to do)."""
    return (
        tagged.writeStream.format("noop")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(processingTime="2 seconds")
        .start()
    )


def start_available_now(tagged: DataFrame, checkpoint: Path):
    """What is there now, in batches that respect the source's limits; then the query stops."""
    return (
        tagged.writeStream.format("noop")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(availableNow=True)
        .start()
    )


def start_once(tagged: DataFrame, checkpoint: Path):
    """Deprecated since Spark 3.4: ONE batch of what is there, ignoring the source's limits."""
    return (
        tagged.writeStream.format("noop")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(once=True)
        .start()
    )


# Part 1's triggers: the label in the table, and the function that starts the query with it.
TRIGGERS = [
    ("default (no .trigger())", start_default),
    ("processingTime='2 seconds'", start_processing_time),
    ("availableNow=True", start_available_now),
    ("once=True (deprecated)", start_once),
]
# The triggers whose query stops once it has read what is there.
ENDS_BY_ITSELF = {start_available_now, start_once}


def start_and_run(spark, bootstrap: str, kinds: DataFrame, start, checkpoint: Path) -> list[dict]:
    """The pipeline over the 40 messages, started by ``start`` (one of part 1's triggers).

    Returns the query's progress reports.
    """
    tagged = build_tagged(read_words(spark, bootstrap, WORDS_TOPIC), kinds)
    query = start(tagged, checkpoint)
    # availableNow and once end by themselves; the others run until the lesson stops them.
    if start in ENDS_BY_ITSELF:
        finish([query])
    else:
        drain([query])
    return query.recentProgress


def start_continuous(spark, bootstrap: str, kinds: DataFrame):
    """Legacy: continuous processing, 1-second epochs, into its own memory sink."""
    tagged = build_tagged(read_messages(spark, bootstrap, WORDS_TOPIC), kinds)
    return (
        tagged.writeStream.format("memory")
        .queryName("continuous")
        .trigger(continuous="1 second")
        .start()
    )


def start_kafka_sink(
    records: DataFrame, bootstrap: str, topic: str, checkpoint: Path, trigger: dict
):
    """Start a query that writes ``records`` (key, value) to ``topic`` with ``trigger``."""
    return (
        records.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .options(**security_options(bootstrap))
        .option("topic", topic)
        .option("checkpointLocation", paths.uri(checkpoint))
        # Real-time mode runs update mode only; for a stateless query it is append.
        .outputMode("update")
        .trigger(**trigger)
        .start()
    )


def start_latency_queries(spark, bootstrap: str, kinds: DataFrame, checkpoints: Path) -> list:
    """The same pipeline twice on the same topic: real-time mode, and trigger 0."""
    # startingOffsets=latest: each query reads only what is sent after it started.
    realtime_input = read_messages(spark, bootstrap, LATENCY_TOPIC, starting_offsets="latest")
    realtime = start_kafka_sink(
        to_kafka_record(build_tagged(realtime_input, kinds)),
        bootstrap,
        REALTIME_OUT,
        checkpoints / "realtime",
        REALTIME,
    )
    # Trigger 0: the next micro-batch as soon as the last one ends (the default, written out).
    microbatch_input = read_messages(spark, bootstrap, LATENCY_TOPIC, starting_offsets="latest")
    microbatch = start_kafka_sink(
        to_kafka_record(build_tagged(microbatch_input, kinds)),
        bootstrap,
        MICROBATCH_OUT,
        checkpoints / "microbatch",
        {"processingTime": "0 seconds"},
    )
    return [realtime, microbatch]


# Part 3: what real-time mode refuses. Each attempt's docstring says what it tries, a blank
# line, then what to do instead (the lesson prints both).


def start_realtime_append(spark, bootstrap: str, kinds: DataFrame):
    """Real-time mode in the default output mode (append)

    Only update mode: set .outputMode('update'); for a stateless query it writes the same
    rows."""
    tagged = build_tagged(read_messages(spark, bootstrap, LATENCY_TOPIC), kinds)
    return (
        tagged.writeStream.format("console")
        # No .outputMode(): append, the default, which real-time mode refuses.
        .trigger(**REALTIME)
        .start()
    )


def start_realtime_deduplicated(spark, bootstrap: str, kinds: DataFrame):
    """Real-time mode with dropDuplicates

    In Spark 4.2 real-time mode runs only the operators on its allowlist: select, where and
    withColumn with Spark's own functions, explode, union, withWatermark, observe, and a
    broadcast hash join with a static table (this lesson's pipeline). Everything else fails
    once the query runs, with OPERATOR_OR_SINK_NOT_IN_ALLOWLIST: aggregations, dropDuplicates,
    stream-stream joins, repartition, and every Python operator (udf, pandas_udf,
    mapInPandas, mapInArrow, Python UDTFs). (Spark 4.3's guide adds aggregations and
    dropDuplicates.)"""
    # Every word seen so far must be remembered: that is state.
    words = read_messages(spark, bootstrap, LATENCY_TOPIC).dropDuplicates(["word"])
    return (
        words.writeStream.format("console")
        .outputMode("update")
        # start() accepts it; the query fails as soon as it runs.
        .trigger(**REALTIME)
        .start()
    )


def start_realtime_rate(spark, bootstrap: str, kinds: DataFrame):
    """Real-time mode on the rate source

    Kafka is the only source in Spark 4.2. start() accepts the rate source; the query dies a
    moment later, which start() does not tell you: query.exception(), awaitTermination() or a
    listener's onQueryTerminated does, and Spark logs it on stderr."""
    numbers = (
        spark.readStream.format("rate")
        # One row a second, numbered: a source that is not Kafka.
        .load()
    )
    return (
        numbers.writeStream.format("console")
        .outputMode("update")
        # start() accepts it; the query fails a moment later.
        .trigger(**REALTIME)
        .start()
    )


def start_realtime_memory(spark, bootstrap: str, kinds: DataFrame):
    """Real-time mode into the memory sink

    Sinks in Spark 4.2: Kafka, console and foreach; memory and foreachBatch are refused (Spark
    4.3's guide adds the memory sink). So are batch durations under 5 seconds and
    asyncProgressTrackingEnabled."""
    tagged = build_tagged(read_messages(spark, bootstrap, LATENCY_TOPIC), kinds)
    return (
        tagged.writeStream.format("memory")
        .queryName("rt")
        .outputMode("update")
        .trigger(**REALTIME)
        .start()
    )


def write_inputs(bootstrap: str) -> None:
    """Every run starts from empty topics: 40 words to read, and the latency topics."""
    recreate_topics(bootstrap, [WORDS_TOPIC, LATENCY_TOPIC], partitions=PARTITIONS)
    # The results' topics: Kafka stamps each result with the moment it wrote it.
    latency.create_stamped_topics(bootstrap, [REALTIME_OUT, MICROBATCH_OUT], fresh=True)
    words = [{"id": n, "word": WORD_KINDS[n % 5][0]} for n in range(WORD_COUNT)]
    latency.send_timed(bootstrap, WORDS_TOPIC, words)


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, simulator=False).parse_args(argv)
    # Scratch: only this folder is ever deleted, on every run, so each trigger starts from the
    # same message.
    checkpoints = checkpoint_root(LESSON, args) / "this-run"
    paths.remove_tree(checkpoints, allow_outside=True)
    with kafka_for_lesson() as bootstrap, explain_failures():
        write_inputs(bootstrap)
        with lesson_session(LESSON, args, kafka=True) as spark:
            kinds = read_kinds(spark)
            banner(
                f"1. Micro-batch triggers, {WORD_COUNT} messages, "
                f"maxOffsetsPerTrigger {MAX_OFFSETS_PER_TRIGGER}"
            )
            rows = []
            for number, (label, start) in enumerate(TRIGGERS):
                checkpoint = checkpoints / f"trigger-{number}"
                reports = start_and_run(spark, bootstrap, kinds, start, checkpoint)
                ends = "yes" if start in ENDS_BY_ITSELF else "no"
                rows.append((label, *progress.describe_batches(reports), ends))
            narration.print_table(
                ("trigger", "micro-batches", "rows in each", "one every", "ends by itself"), rows
            )
            say("""The default runs the next micro-batch as soon as the last one ends;
                processingTime waits for the next multiple of its interval. Neither ends by
                itself: the lesson stops them. availableNow reads what is there when it starts,
                in batches that respect maxOffsetsPerTrigger, then stops: a backfill, or an
                incremental batch job run on a schedule. once does the same in ONE batch that
                ignores the limit (Spark warns on stderr); it is deprecated since Spark 3.4: use
                availableNow.""")

            banner("2. continuous (legacy): records one by one, map-like queries only")
            demos.show_refusal(
                functools.partial(start_continuous, spark, bootstrap, kinds),
                "This pipeline in continuous mode",
            )
            say("""Continuous processing (Spark 2.3) ran long-lived tasks too, but only map-like
                queries over a stream: no static table (as here), no joins, no aggregations;
                at-least-once results, no progress reports. It gets no new features: for low
                latency use real-time mode, which runs this pipeline.""")

            banner("3. Real-time mode: what it refuses in Spark 4.2")
            for start in (
                start_realtime_append,
                start_realtime_deduplicated,
                start_realtime_rate,
                start_realtime_memory,
            ):
                # Each attempt's docstring says what it tries, then what to do instead.
                what, instead = start.__doc__.split("\n\n", 1)
                demos.show_refusal(functools.partial(start, spark, bootstrap, kinds), what)
                say(instead)

            banner(
                "4. Latency, Kafka -> Spark -> Kafka: real-time mode against trigger 0 "
                f"({args.duration:.0f} s)"
            )
            too_few_cores = latency.cores_missing(spark.sparkContext, PARTITIONS)
            if too_few_cores:
                say(too_few_cores)
                return
            queries = start_latency_queries(spark, bootstrap, kinds, checkpoints / "latency")
            records = [
                {"id": n, "word": WORD_KINDS[n % 5][0]} for n in range(int(args.duration * RATE))
            ]
            latencies = latency.measure_latency(
                bootstrap,
                LATENCY_TOPIC,
                LATENCY_OUTPUTS,
                records,
                rate=RATE,
                warm_up_record=lambda n: {"id": -n, "word": "spark"},
            )
            for query in queries:
                stop_between_batches(query)
            narration.print_table(
                ("trigger", "messages", "p50", "p90"), latency.summary_rows(latencies)
            )
            checkpointed = len(progress.batches_run(queries[0].recentProgress))
            say(f"""Both queries read the same {len(records)} messages ({RATE} per second, each
                with the time it was sent), ran the same pipeline, and wrote to Kafka; latency
                is the broker's stamp on the result minus that time. A micro-batch passes a
                record on when its batch ends: planning, reading, writing and committing each
                time. Real-time mode's tasks run for the whole batch and pass each record on at
                once. Its '5 seconds' is how often it checkpoints progress ({checkpointed}
                batches so far), not the latency.""")
            say(f"""Each Kafka partition needs a core of its own for the whole batch. In Spark
                4.2, with too few there is no error and no warning: a partition's task waits
                for a core, starts when the batch's time is already up, and reads nothing,
                batch after batch. That partition is never read; the only sign is its offset
                in the progress reports, which stays put. This topic has {PARTITIONS}: the
                other core runs micro-batches.""")
            say("""What a failure costs: real-time mode writes its offsets and commit at the END
                of each '5 seconds' batch, while its tasks have been sending results all along.
                A query that failed mid-batch, started again on its checkpoint, runs that batch
                again from the last commit's offsets: processing is exactly-once. But the Kafka
                sink cannot take back what it sent, so up to one batch duration of results goes
                out twice: at-least-once, as with micro-batches into Kafka (lesson 08); readers
                dedupe by key. The duration trades that replay against checkpoint overhead: a
                longer batch checkpoints less often and re-sends more after a failure.""")


if __name__ == "__main__":
    run_lesson(main)

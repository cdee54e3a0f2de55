"""13 · Triggers: when a micro-batch runs, and how fast a result can come out.

What you'll learn
  - The micro-batch triggers on one pipeline: the default (the next batch as soon as the
    last one ends), ``processingTime`` (one every N seconds), ``availableNow`` (what is
    there now, in batches that respect the source's limits, then stop) and ``once``
    (deprecated: one batch that ignores those limits; use ``availableNow``).
  - ``continuous`` (legacy): map-like queries only, no joins, no further development.
  - Real-time mode, ``trigger(realTime="5 seconds")`` (Spark 4.1+): long-running tasks
    that pass each record on at once; the duration is how often progress is checkpointed.
  - What real-time mode refuses: any output mode but update, stateful operators, sources
    other than Kafka, the memory and foreachBatch sinks, durations under 5 s.
  - Latency measured Kafka -> Spark -> Kafka on the same messages: p50 and p90 for
    real-time mode against a micro-batch query with trigger 0.

Run
  python streaming_tutorial/13_triggers.py                  # about 40 s; starts Kafka if needed
  python streaming_tutorial/13_triggers.py --duration 5     # measure latency on 5 s of messages
  The lesson writes its own messages; its topics and checkpoints are recreated on every
  run, so each trigger starts from the same first message (a second run resumes nothing).
  Another Kafka: KAFKA_BOOTSTRAP_SERVERS=host:9092 python streaming_tutorial/13_triggers.py

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

from pathlib import Path

import lesson13_latency as latency
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import paths
from common.parsing import read_kafka
from infra import cli
from infra.kafka import explain_failures, recreate_topics, spark_options
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
LATENCY_TOPIC, REALTIME_OUT, MICROBATCH_OUT = (
    "triggers-latency",
    "triggers-realtime",
    "triggers-microbatch",
)
WORD_COUNT = 40
MAX_OFFSETS_PER_TRIGGER = 10  # so a trigger that respects the source's limits needs 4 batches
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
REALTIME = {
    "realTime": "5 seconds"
}  # the shortest Spark accepts (spark.sql.streaming.realTimeMode.minBatchDuration)
RATE = 20  # latency messages per second
LATENCY_OUTPUTS = {
    "realTime='5 seconds'": REALTIME_OUT,
    "processingTime='0 seconds'": MICROBATCH_OUT,
}
TRIGGERS = [
    ("default (no .trigger())", {}),
    ("processingTime='2 seconds'", {"processingTime": "2 seconds"}),
    ("availableNow=True", {"availableNow": True}),
    ("once=True (deprecated)", {"once": True}),
]
ENDS_BY_ITSELF = {
    "availableNow",
    "once",
}  # the triggers whose query stops once it has read what is there


def read_messages(
    spark,
    bootstrap: str,
    topic: str,
    *,
    starting_offsets: str = "earliest",
    max_offsets_per_trigger: int | None = None,
) -> DataFrame:
    """The topic's messages: id, word, and when each was sent (sent_ms, for the latency)."""
    raw = read_kafka(
        spark,
        bootstrap,
        topic,
        starting_offsets=starting_offsets,
        max_offsets_per_trigger=max_offsets_per_trigger,
    )
    message = F.from_json(F.col("value").cast("string"), "id INT, word STRING, sent_ms BIGINT")
    return raw.select(message.alias("m")).select("m.*")


def read_kinds(spark) -> DataFrame:
    """The static table, as literal rows in the plan (createDataFrame would make an RDD of them)."""
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


def start_noop(results: DataFrame, checkpoint: Path, trigger: dict):
    # The noop sink computes every row and writes nothing: the progress reports say what ran.
    writer = results.writeStream.format("noop").option("checkpointLocation", paths.uri(checkpoint))
    return (writer.trigger(**trigger) if trigger else writer).start()  # no .trigger(): the default


def start_kafka_sink(
    records: DataFrame, bootstrap: str, topic: str, checkpoint: Path, trigger: dict
):
    return (
        records.writeStream.format("kafka")
        .options(**spark_options(bootstrap))
        .option("topic", topic)
        .option("checkpointLocation", paths.uri(checkpoint))
        .outputMode(
            "update"
        )  # real-time mode runs update mode only; for a stateless query it is append
        .trigger(**trigger)
        .start()
    )


def start_and_run(
    spark, bootstrap: str, kinds: DataFrame, trigger: dict, checkpoint: Path
) -> list[dict]:
    """The pipeline over the 40 messages with one trigger; its progress reports."""
    messages = read_messages(
        spark, bootstrap, WORDS_TOPIC, max_offsets_per_trigger=MAX_OFFSETS_PER_TRIGGER
    )
    query = start_noop(build_tagged(messages, kinds), checkpoint, trigger)
    # availableNow and once end by themselves; the others run until the lesson stops them.
    (finish if ENDS_BY_ITSELF & trigger.keys() else drain)([query])
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


def start_latency_queries(spark, bootstrap: str, kinds: DataFrame, checkpoints: Path) -> list:
    """The same pipeline twice on the same topic: real-time mode, and micro-batches with trigger 0."""
    queries = []
    for name, topic, trigger in (
        ("realtime", REALTIME_OUT, REALTIME),
        ("microbatch", MICROBATCH_OUT, {"processingTime": "0 seconds"}),
    ):
        # startingOffsets=latest: each query reads only what is sent after it started.
        messages = read_messages(spark, bootstrap, LATENCY_TOPIC, starting_offsets="latest")
        records = to_kafka_record(build_tagged(messages, kinds))
        queries.append(start_kafka_sink(records, bootstrap, topic, checkpoints / name, trigger))
    return queries


def start_realtime_append(spark, bootstrap: str, kinds: DataFrame):
    """Real-time mode in the default output mode (append)

    Only update mode: set .outputMode('update'); for a stateless query it writes the same rows."""
    tagged = build_tagged(read_messages(spark, bootstrap, LATENCY_TOPIC), kinds)
    return tagged.writeStream.format("console").trigger(**REALTIME).start()


def start_realtime_deduplicated(spark, bootstrap: str, kinds: DataFrame):
    """Real-time mode with dropDuplicates

    Stateless operators only: no aggregation, dropDuplicates or stream-stream join; the broadcast
    stream-static join of this lesson's pipeline is allowed."""
    words = read_messages(spark, bootstrap, LATENCY_TOPIC).dropDuplicates(
        ["word"]
    )  # every word seen: state
    return words.writeStream.format("console").outputMode("update").trigger(**REALTIME).start()


def start_realtime_rate(spark, bootstrap: str, kinds: DataFrame):
    """Real-time mode on the rate source

    Kafka is the only source. start() accepts the rate source; the query dies a moment later, which
    only query.exception() (or awaitTermination) tells you. Spark also logs it on stderr."""
    numbers = spark.readStream.format("rate").load()
    return numbers.writeStream.format("console").outputMode("update").trigger(**REALTIME).start()


def start_realtime_memory(spark, bootstrap: str, kinds: DataFrame):
    """Real-time mode into the memory sink

    Sinks: Kafka, console and foreach; memory and foreachBatch are refused. So are batch durations
    under 5 seconds and asyncProgressTrackingEnabled."""
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
    latency.create_stamped_topics(
        bootstrap, [REALTIME_OUT, MICROBATCH_OUT], fresh=True
    )  # results stamped by Kafka
    latency.send_timed(
        bootstrap, WORDS_TOPIC, [{"id": n, "word": WORD_KINDS[n % 5][0]} for n in range(WORD_COUNT)]
    )


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, simulator=False).parse_args(argv)
    checkpoints = (
        checkpoint_root(LESSON, args) / "this-run"
    )  # scratch: only this folder is ever deleted,
    paths.remove_tree(
        checkpoints, allow_outside=True
    )  # on every run, so each trigger starts from the same message
    with kafka_for_lesson() as bootstrap, explain_failures():
        write_inputs(bootstrap)
        with lesson_session(LESSON, args, kafka=True) as spark:
            kinds = read_kinds(spark)
            banner(
                f"1. Micro-batch triggers, {WORD_COUNT} messages, maxOffsetsPerTrigger {MAX_OFFSETS_PER_TRIGGER}"
            )
            runs = [
                start_and_run(spark, bootstrap, kinds, trigger, checkpoints / f"trigger-{number}")
                for number, (_, trigger) in enumerate(TRIGGERS)
            ]
            narration.print_table(
                ("trigger", "micro-batches", "rows in each", "one every", "ends by itself"),
                [
                    (
                        label,
                        *progress.describe_batches(run),
                        "yes" if ENDS_BY_ITSELF & trigger.keys() else "no",
                    )
                    for (label, trigger), run in zip(TRIGGERS, runs)
                ],
            )
            say("""The default runs the next micro-batch as soon as the last one ends; processingTime waits
                for the next multiple of its interval. Neither ends by itself: the lesson stops them.
                availableNow reads what is there when it starts, in batches that respect
                maxOffsetsPerTrigger, then stops: a backfill, or an incremental batch job run on a
                schedule. once does the same in ONE batch that ignores the limit (Spark warns on
                stderr); it is deprecated since Spark 3.4: use availableNow.""")

            banner("2. continuous (legacy): records one by one, map-like queries only")
            demos.show_refusal(
                lambda: start_continuous(spark, bootstrap, kinds),
                "This pipeline in continuous mode",
            )
            say("""Continuous processing (Spark 2.3) ran long-lived tasks too, but only map-like queries
                over a stream: no static table (as here), no joins, no aggregations; at-least-once
                results, no progress reports. It gets no new features: for low latency use real-time
                mode, which runs this pipeline.""")

            banner("3. Real-time mode: what it refuses")
            for start in (
                start_realtime_append,
                start_realtime_deduplicated,
                start_realtime_rate,
                start_realtime_memory,
            ):
                what, instead = start.__doc__.split(
                    "\n\n", 1
                )  # each attempt's docstring says what to do instead
                demos.show_refusal(lambda: start(spark, bootstrap, kinds), what)
                say(instead)

            banner(
                f"4. Latency, Kafka -> Spark -> Kafka: real-time mode against trigger 0 ({args.duration:.0f} s)"
            )
            if too_few_cores := latency.cores_missing(spark.sparkContext, PARTITIONS):
                return say(too_few_cores)
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
            say(f"""Both queries read the same {len(records)} messages ({RATE} per second, each with the time it
                was sent), ran the same pipeline, and wrote to Kafka; latency is the broker's stamp on
                the result minus that time. A micro-batch passes a record on when its batch ends:
                planning, reading, writing and committing each time. Real-time mode's tasks run for the
                whole batch and pass each record on at once. Its '5 seconds' is how often it
                checkpoints progress ({len(progress.batches_run(queries[0].recentProgress))} batches so far), not
                the latency.""")
            say(f"""Each Kafka partition needs a core of its own for the whole batch; with too few, a partition
                is simply not read, with no error. This topic has {PARTITIONS}: the other core runs micro-batches.""")


if __name__ == "__main__":
    run_lesson(main)
